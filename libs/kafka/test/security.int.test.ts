// Every client of libs/kafka against the test broker's secure listeners: SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512) over TLS and mutual TLS, through librdkafka and through the admin's own wire
// connection (topic configs); refused logins and untrusted certificates answer
// KAFKA_AUTHENTICATION_FAILED, not a timeout.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import path from 'node:path';
import { BatchConsumer, KAFKA_CHANNELS, KafkaAdmin, KafkaProducer, TransactionalProducer, type ClientErrorEvent, type KafkaSecurity, type SaslMechanism } from '../src';
import { pollCount, testSecureListeners, unique } from './helpers';

jest.setTimeout(60_000);

const listeners = testSecureListeners();
const tls = (file: string) => path.join(listeners.tlsDir, file);
const sasl = (mechanism: SaslMechanism, password = listeners.password): KafkaSecurity => ({
  protocol: 'sasl_ssl',
  sasl: { mechanism, username: listeners.username, password },
  tls: { caFile: tls('ca.pem') },
});
const mutualTls: KafkaSecurity = { protocol: 'ssl', tls: { caFile: tls('ca.pem'), certFile: tls('client-cert.pem'), keyFile: tls('client-key.pem') } };

/** Creates a topic, changes and reads back a config, produces keyed records and reads them back, all through `security`. */
async function roundTrip(brokers: string, security: KafkaSecurity): Promise<void> {
  const admin = new KafkaAdmin({ brokers, security, requestTimeoutMs: 20_000 });
  const producer = new KafkaProducer({ brokers, security });
  const topic = unique('secure');
  let consumer: BatchConsumer | undefined;
  try {
    await admin.createTopic({ name: topic, partitions: 2 });
    await admin.alterTopicConfigs(topic, { 'retention.ms': '3600000' });
    const configs = await admin.describeTopicConfigs([topic]);
    expect(configs.get(topic)?.['retention.ms']).toMatchObject({ value: '3600000', isTopicOverride: true });
    expect(await admin.listTopics()).toContain(topic);

    await producer.connect();
    const reports = await producer.sendBatch([1, 2, 3, 4, 5].map((i) => ({ topic, key: `k${i}`, value: `v${i}` })));
    expect(reports).toHaveLength(5);

    consumer = new BatchConsumer({ brokers, security, groupId: unique('g'), topics: [topic], sessionTimeoutMs: 6000 });
    await consumer.connect();
    const got = await pollCount(consumer, 5);
    expect(got.map((m) => m.value?.toString()).sort()).toEqual(['v1', 'v2', 'v3', 'v4', 'v5']);
  } finally {
    await consumer?.close();
    await producer.close();
    await admin.deleteTopics([topic]).catch(() => undefined);
    await admin.close();
  }
}

describe('Kafka clients on secured listeners', () => {
  it.each<SaslMechanism>(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'])('SASL %s over TLS: admin, configs, produce and consume', async (mechanism) => {
    await roundTrip(listeners.saslSsl, sasl(mechanism));
  });

  it('mutual TLS with a client certificate: admin, configs, produce and consume', async () => {
    await roundTrip(listeners.ssl, mutualTls);
  });

  it('transactions over SASL SCRAM-SHA-512: a committed transaction reaches a read_committed consumer', async () => {
    const security = sasl('SCRAM-SHA-512');
    const brokers = listeners.saslSsl;
    const admin = new KafkaAdmin({ brokers, security, requestTimeoutMs: 20_000 });
    const topic = unique('secure-tx');
    await admin.createTopic({ name: topic, partitions: 1 });
    const producer = new TransactionalProducer({ brokers, security, transactionalId: unique('tx') });
    const consumer = new BatchConsumer({ brokers, security, groupId: unique('g'), topics: [topic], isolationLevel: 'read_committed', sessionTimeoutMs: 6000 });
    try {
      await producer.connect();
      await producer.begin();
      await producer.produce([{ topic, value: 'committed' }]);
      await producer.commit();
      await consumer.connect();
      const got = await pollCount(consumer, 1);
      expect(got.map((m) => m.value?.toString())).toEqual(['committed']);
    } finally {
      await consumer.close();
      await producer.close();
      await admin.deleteTopics([topic]).catch(() => undefined);
      await admin.close();
    }
  });

  describe('refusals say why', () => {
    const refused = { code: 'KAFKA_AUTHENTICATION_FAILED', retryable: false };

    it('a wrong SCRAM password: admin calls, the config requests and connects answer KAFKA_AUTHENTICATION_FAILED', async () => {
      const security = sasl('SCRAM-SHA-512', 'not-the-password');
      const brokers = listeners.saslSsl;
      const admin = new KafkaAdmin({ brokers, security, requestTimeoutMs: 3000 });
      const producer = new KafkaProducer({ brokers, security });
      const consumer = new BatchConsumer({ brokers, security, groupId: unique('g'), topics: ['any'], sessionTimeoutMs: 6000 });
      const events: ClientErrorEvent[] = [];
      const listener = (m: unknown) => events.push(m as ClientErrorEvent);
      subscribe(KAFKA_CHANNELS.clientError, listener);
      try {
        await expect(admin.listTopics()).rejects.toMatchObject({ ...refused, message: expect.stringContaining('invalid credentials') });
        await expect(admin.describeTopicConfigs(['any'])).rejects.toMatchObject(refused);
        await expect(producer.connect(3000)).rejects.toMatchObject({ ...refused, details: { operation: 'producer.connect' } });
        await expect(consumer.connect(3000)).rejects.toMatchObject({ ...refused, details: { operation: 'consumer.connect' } });
        // The consumer's asynchronous error events name the refusal too (the binding drops their
        // code). They come from librdkafka's own connection attempts, which the connect's verdict
        // (the producer's refusal, kept 30 s) can precede: waited for, a few seconds at most (a CI
        // run found none yet at the connect's answer).
        const deadline = Date.now() + 10_000;
        while (!events.some((e) => e.code === 'KAFKA_AUTHENTICATION_FAILED') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        expect(events.map((e) => e.code)).toContain('KAFKA_AUTHENTICATION_FAILED');
      } finally {
        unsubscribe(KAFKA_CHANNELS.clientError, listener);
        await consumer.close().catch(() => undefined);
        await producer.close().catch(() => undefined);
        await admin.close();
      }
    });

    it('a broker certificate from an untrusted CA (no CA file: the system CAs) is refused', async () => {
      const security: KafkaSecurity = { protocol: 'sasl_ssl', sasl: { mechanism: 'PLAIN', username: listeners.username, password: listeners.password } };
      const admin = new KafkaAdmin({ brokers: listeners.saslSsl, security, requestTimeoutMs: 3000 });
      try {
        await expect(admin.describeTopicConfigs(['any'])).rejects.toMatchObject({ ...refused, message: expect.stringMatching(/TLS handshake/) });
        await expect(admin.listTopics()).rejects.toMatchObject(refused);
      } finally {
        await admin.close();
      }
    });

    it('a client without its certificate on the mutual-TLS listener is refused', async () => {
      const security: KafkaSecurity = { protocol: 'ssl', tls: { caFile: tls('ca.pem') } };
      const admin = new KafkaAdmin({ brokers: listeners.ssl, security, requestTimeoutMs: 3000 });
      const producer = new KafkaProducer({ brokers: listeners.ssl, security });
      try {
        await expect(admin.describeTopicConfigs(['any'])).rejects.toMatchObject(refused);
        await expect(admin.listTopics()).rejects.toMatchObject(refused);
        await expect(producer.connect(3000)).rejects.toMatchObject(refused);
      } finally {
        await producer.close().catch(() => undefined);
        await admin.close();
      }
    });

    it('a key file that does not exist is refused when the client is made, naming the file', () => {
      const security: KafkaSecurity = { protocol: 'ssl', tls: { caFile: tls('ca.pem'), certFile: tls('client-cert.pem'), keyFile: tls('missing-key.pem') } };
      const invalid = { code: 'KAFKA_INVALID_CONFIG', message: expect.stringContaining('missing-key.pem') };
      expect(() => new KafkaAdmin({ brokers: listeners.ssl, security })).toThrow(expect.objectContaining(invalid));
      expect(() => new KafkaProducer({ brokers: listeners.ssl, security })).toThrow(expect.objectContaining(invalid));
      expect(() => new BatchConsumer({ brokers: listeners.ssl, security, groupId: 'g', topics: ['t'] })).toThrow(expect.objectContaining(invalid));
    });
  });
});
