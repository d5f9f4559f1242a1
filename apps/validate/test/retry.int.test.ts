import { KafkaProducer } from '@sluice/kafka';
import { sampleValue } from '@sluice/telemetry';
import { freePort } from '@sluice/testing';
import { click, createTopics, order, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';

const brokers = testBrokers();
const t = topicsFor('retry');
let validate: Child | undefined;

afterAll(async () => {
  await stopService(validate, 'SIGKILL');
});

it('a missing output topic stalls the batch visibly (aborted, retried), then it completes once the topic exists; SIGTERM exits 0', async () => {
  // The clickstream valid topic is missing on purpose.
  await createTopics(brokers, [t.raw, t.dlq, t.valid.orders, t.valid.inventory]);
  const events = [order(), click(), order()];
  const producer = new KafkaProducer({ brokers, clientId: 'retry-feed' });
  await producer.connect();
  await producer.sendBatch(events.map((e) => ({ topic: t.raw, key: 'k', value: Buffer.from(JSON.stringify(e)) })));
  await producer.close();

  const opsPort = await freePort();
  validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { OPS_PORT: String(opsPort) }));
  const warning = JSON.parse(await validate.waitFor(/batch aborted; retrying/));
  expect(warning.code).toBe('KAFKA_TOPIC_NOT_FOUND');
  // The orders of the aborted batch were written to their topic (a reader that sees aborted
  // transactions finds them), yet none is visible under read_committed.
  const written = await readTopics(brokers, [t.valid.orders], 2, 10_000, 500, 'read_uncommitted');
  expect(written.length).toBeGreaterThanOrEqual(2);
  expect(await readTopics(brokers, [t.valid.orders], 0, 1000, 1500)).toEqual([]);

  await createTopics(brokers, [t.valid.clickstream]);
  const out = await readTopics(brokers, [t.valid.orders, t.valid.clickstream, t.dlq], 3, 60_000);
  expect(out.map((m) => m.topic).sort()).toEqual([t.valid.clickstream, t.valid.orders, t.valid.orders].sort());
  // Counted once, when the transaction committed: each aborted attempt used to count the batch again.
  const metrics = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
  expect(sampleValue(metrics, 'sluice_validate_events_in_total', { outcome: 'consumed' })).toBe(3);
  expect(sampleValue(metrics, 'sluice_validate_events_out_total', { outcome: 'valid', contract: 'orders' })).toBe(2);
  expect(sampleValue(metrics, 'sluice_validate_events_out_total', { outcome: 'valid', contract: 'clickstream' })).toBe(1);

  validate.proc.kill('SIGTERM');
  expect(await validate.exited).toBe(0);
});

