// validate on a secured cluster: its consumer, transactional producer and progress admin all
// connect with the KAFKA_SECURITY_* / KAFKA_SASL_* / KAFKA_SSL_* settings; a mistyped one stops
// the start with the setting named.
import { KafkaProducer } from '@sluice/kafka';
import { createTopics, order, readTopics, startService, stopService, testBrokers, testSecureKafka, topicsFor, validateEnv, type Child } from './support';

jest.setTimeout(120_000);

describe('validate on SASL over TLS', () => {
  const plaintext = testBrokers();
  const secure = testSecureKafka('SCRAM-SHA-256');
  let validate: Child | undefined;

  afterEach(async () => stopService(validate));

  it('routes raw events to their valid topic and the DLQ in transactions on the secured listener', async () => {
    const t = topicsFor('secure');
    await createTopics(plaintext, [t.raw, t.dlq, ...Object.values(t.valid)], 1);
    validate = startService('apps/validate/src/main.ts', validateEnv(secure.brokers, t, secure.env));
    const good = order();
    const producer = new KafkaProducer({ brokers: plaintext, clientId: 'secure-raw' });
    await producer.connect();
    try {
      await producer.sendBatch([
        { topic: t.raw, key: String(good.order_id), value: Buffer.from(JSON.stringify(good)) },
        { topic: t.raw, key: 'bad', value: Buffer.from('{not json') },
      ]);
    } finally {
      await producer.close();
    }
    // Read through the plaintext listener, committed transactions only.
    const got = await readTopics(plaintext, [t.valid.orders, t.dlq], 2);
    expect(got.map((m) => m.topic).sort()).toEqual([t.dlq, t.valid.orders].sort());
    expect(validate.output.join('\n')).not.toMatch(/KAFKA_AUTHENTICATION_FAILED/);
  });

  it('refuses a mistyped security setting at start, naming it', async () => {
    const t = topicsFor('secure-typo');
    const { KAFKA_SASL_PASSWORD: password, ...rest } = secure.env;
    validate = startService('apps/validate/src/main.ts', validateEnv(secure.brokers, t, { ...rest, KAFKA_SASL_PASWORD: password }));
    expect(await validate.exited).not.toBe(0);
    expect(validate.output.join('\n')).toMatch(/KAFKA_SASL_PASWORD/);
  });
});
