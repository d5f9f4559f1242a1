import { loadConfig } from '@sluice/config';
import { KafkaAdmin } from '@sluice/kafka';
import { ingestConfigSchema } from '../src/config';
import { createIngest, type IngestRuntime } from '../src/runtime';
import { KEYS, ingestEnv, order, randomName, testBrokers } from './support';

// A raw topic whose max.message.bytes is below what ingest accepts refuses the events for good:
// a retry can never succeed, so the answer must not be a retryable 503.
const brokers = testBrokers();
const rawTopic = randomName('raw-limit');
let ingest: IngestRuntime;
let baseUrl = '';

beforeAll(async () => {
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  try {
    await admin.createTopic({ name: rawTopic, partitions: 1, configs: { 'max.message.bytes': '100' } });
  } finally {
    await admin.close();
  }
  ingest = await createIngest(loadConfig(ingestConfigSchema, ingestEnv(brokers, rawTopic)));
  baseUrl = await ingest.app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);

afterAll(async () => {
  await ingest?.close();
});

it('answers 413 (not retryable) when the raw topic refuses an event as too large, and stays live', async () => {
  const res = await fetch(`${baseUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(order()),
  });
  const body = (await res.json()) as { error: { code: string; retryable: boolean; details: { reason: string } } };
  expect({ status: res.status, code: body.error.code, retryable: body.error.retryable, reason: body.error.details.reason }).toEqual({
    status: 413,
    code: 'INGEST_EVENT_REFUSED_BY_KAFKA',
    retryable: false,
    reason: 'KAFKA_MESSAGE_TOO_LARGE',
  });
  expect(res.headers.get('retry-after')).toBeNull();
  expect(ingest.isLive()).toBe(true);
}, 60_000);
