// ingest on a secured cluster: the KAFKA_SECURITY_* / KAFKA_SASL_* / KAFKA_SSL_* settings reach
// every Kafka client it makes (the topic-config probe, the producer), and a refused login stops
// the start with KAFKA_AUTHENTICATION_FAILED rather than a timeout.
import { loadConfig } from '@sluice/config';
import { ingestConfigSchema } from '../src/config';
import { createIngest } from '../src/runtime';
import { KEYS, createTopics, ingestEnv, order, randomName, readTopic, startIngest, testBrokers, testSecureKafka } from './support';

jest.setTimeout(60_000);

describe('ingest on SASL over TLS', () => {
  const plaintext = testBrokers();
  const secure = testSecureKafka('SCRAM-SHA-512');

  it('acknowledges events only once the secured broker has them', async () => {
    const topic = randomName('raw-secure');
    await createTopics(plaintext, [topic], 1);
    const { ingest, url } = await startIngest(secure.brokers, topic, secure.env);
    try {
      const events = [order(), order(), order()];
      const res = await fetch(`${url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(events),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ accepted: 3, rejected: 0 });
    } finally {
      await ingest.close();
    }
    // Read back through the plaintext listener of the same broker.
    const got = await readTopic(plaintext, topic, 3);
    expect(got).toHaveLength(3);
  });

  it('refuses to start with a wrong password, saying so', async () => {
    const topic = randomName('raw-secure');
    const config = loadConfig(ingestConfigSchema, ingestEnv(secure.brokers, topic, { ...secure.env, KAFKA_SASL_PASSWORD: 'not-the-password' }));
    await expect(createIngest(config)).rejects.toMatchObject({ code: 'KAFKA_AUTHENTICATION_FAILED', details: { operation: 'producer.connect' } });
  });
});
