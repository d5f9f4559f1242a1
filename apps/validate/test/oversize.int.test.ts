import { HEADERS, MAX_DLQ_RECORD_BYTES } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import { createTopics, order, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';

const brokers = testBrokers();
const t = topicsFor('oversize');
let validate: Child | undefined;

afterAll(async () => {
  await stopService(validate, 'SIGKILL');
});

// A producer writing straight to raw may send a record up to the client's 1,000,000-byte limit.
// Bad bytes go to the DLQ whole, with the DLQ headers on top: such a record used to exceed the
// limit, its produce failed for good, and validate aborted and retried the same batch forever,
// holding up every event behind it in the partition.
it('dead-letters a raw record too large to copy whole (cut, marked, with its source) and goes on', async () => {
  await createTopics(brokers, [t.raw, t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream], 1);
  const huge = Buffer.alloc(999_000, 0x78); // not JSON, not Avro
  const good = order();
  const producer = new KafkaProducer({ brokers, clientId: 'oversize-feed' });
  await producer.connect();
  await producer.sendBatch([
    { topic: t.raw, key: 'big', value: huge, headers: { [HEADERS.producer]: 'direct', note: 'n'.repeat(800) } },
    { topic: t.raw, key: 'k', value: Buffer.from(JSON.stringify(good)) },
  ]);
  await producer.close();

  validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t));
  const out = await readTopics(brokers, [t.valid.orders, t.dlq], 2, 60_000);
  expect(out.map((m) => m.topic).sort()).toEqual([t.dlq, t.valid.orders].sort());
  const dead = out.find((m) => m.topic === t.dlq)!;
  expect(dead.value!.length).toBeLessThan(huge.length);
  expect(dead.value!.equals(huge.subarray(0, dead.value!.length))).toBe(true);
  const size = dead.value!.length + (dead.key?.length ?? 0) + Object.entries(dead.headers).reduce((n, [k, v]) => n + k.length + v.length, 0);
  expect(size).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
  expect(JSON.parse(dead.headers[HEADERS.dlqTruncated].toString())).toEqual({ valueBytes: 999_000, keyBytes: 3, droppedHeaders: 0 });
  expect(dead.headers[HEADERS.dlqReason].toString()).toBe('EVENT_NOT_JSON');
  expect(dead.headers[HEADERS.dlqSourceTopic].toString()).toBe(t.raw);
  expect(dead.headers[HEADERS.dlqSourceOffset].toString()).toBe('0');
  expect(dead.headers.note.toString()).toBe('n'.repeat(800));
  expect(validate.proc.exitCode).toBeNull();
});
