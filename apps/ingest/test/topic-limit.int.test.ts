import { KafkaAdmin } from '@sluice/kafka';
import { eventBytesWithin, type IngestRuntime } from '../src/runtime';
import { KEYS, order, randomName, testBrokers, startIngest } from './support';

// The broker refuses, for good, a record batch over the raw topic's max.message.bytes. ingest
// reads the limit at start: it builds batches below it and refuses an event that cannot fit at
// the edge, with the limit. A limit lowered later is answered 413, never a retryable 503.
const brokers = testBrokers();
const rawTopic = randomName('raw-limit');
const TOPIC_LIMIT = 2000;
const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
let ingest: IngestRuntime;
let baseUrl = '';

const post = async (body: string, contentType = 'application/json') => {
  const res = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': contentType }, body });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  await admin.createTopic({ name: rawTopic, partitions: 1, configs: { 'max.message.bytes': String(TOPIC_LIMIT) } });
  ({ ingest, url: baseUrl } = await startIngest(brokers, rawTopic));
}, 60_000);

afterAll(async () => {
  await ingest?.close();
  await admin.close();
});

it('refuses an event larger than the raw topic takes at the edge, naming the limit', async () => {
  const big = order({}, { customer_id: 'c'.repeat(1500) });
  const res = await post(JSON.stringify(big));
  expect(res.status).toBe(422);
  const errors = res.body.errors as { code: string; message: string }[];
  expect(errors[0]).toMatchObject({ code: 'EVENT_TOO_LARGE', message: expect.stringContaining(`the limit is ${eventBytesWithin(TOPIC_LIMIT)}`) });
}, 30_000);

it('takes an event of exactly the limit it names, and refuses one byte more', async () => {
  // 2000 × 0.98 − 1024, written out: taken from the code under test, a wrong margin would agree with itself.
  const limit = 936;
  const sized = (bytes: number) => {
    const text = JSON.stringify(order());
    return `${text.slice(0, -1)}${' '.repeat(bytes - Buffer.byteLength(text))}}`; // JSON whitespace pads it
  };
  const fits = await post(sized(limit));
  expect({ status: fits.status, accepted: fits.body.accepted }).toEqual({ status: 200, accepted: 1 });
  const over = await post(sized(limit + 1));
  expect(over.status).toBe(422);
  expect((over.body.errors as { code: string; message: string }[])[0]).toMatchObject({ code: 'EVENT_TOO_LARGE', message: expect.stringContaining(`the limit is ${limit}`) });
}, 30_000);

it('delivers a batch of many small events into a topic whose limit is below the producer default batch', async () => {
  const events = Array.from({ length: 100 }, () => JSON.stringify(order()));
  const res = await post(events.join('\n'), 'application/x-ndjson');
  expect({ status: res.status, accepted: res.body.accepted, error: res.body.error }).toEqual({ status: 200, accepted: 100, error: undefined });
}, 30_000);

it('answers 413 (not retryable) when the topic limit is lowered under a running ingest, and stays live', async () => {
  await admin.alterTopicConfigs(rawTopic, { 'max.message.bytes': '100' });
  const res = await post(JSON.stringify(order()));
  const error = res.body.error as { code: string; retryable: boolean; details: { reason: string } };
  expect({ status: res.status, code: error.code, retryable: error.retryable, reason: error.details.reason, retryAfter: res.retryAfter }).toEqual({
    status: 413,
    code: 'INGEST_EVENT_REFUSED_BY_KAFKA',
    retryable: false,
    reason: 'KAFKA_MESSAGE_TOO_LARGE',
    retryAfter: null,
  });
  expect(ingest.isLive()).toBe(true);
}, 60_000);
