import { HEADERS, RAW_TOPIC } from '@sluice/contracts';
import { KafkaAdmin, KafkaProducer } from '@sluice/kafka';
import { createTopics, order, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';

const brokers = testBrokers();
const DAY_MS = 86_400_000;

// Both places a check runs: the worker thread (the default) gets each record's timestamp packed
// beside its value, the main thread reads it off the record.
describe.each([
  ['in the check thread', 'true'],
  ['on the main thread', 'false'],
])('checked %s', (_where, checkThread) => {
  const t = topicsFor(`record-time-${checkThread}`);
  let validate: Child | undefined;

  afterAll(async () => {
    await stopService(validate, 'SIGKILL');
  });

  // validate judges an event's time rules as of its raw record's timestamp. A producer writing to
  // raw directly chose that instant while the topic kept CreateTime: a record stamped 29 days ago
  // carried an event from 30 days ago past the 7-day age rule. The raw topic as planned takes the
  // broker's clock.
  it('judges time rules at the broker append time of a raw topic as planned, whatever timestamp the producer set', async () => {
    const admin = new KafkaAdmin({ brokers, clientId: 'record-time-admin' });
    try {
      await admin.createTopic({ name: t.raw, partitions: 1, configs: { 'message.timestamp.type': RAW_TOPIC.timestampType } });
    } finally {
      await admin.close();
    }
    await createTopics(brokers, [t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream], 1);
    const now = Date.now();
    const stale = order({ event_time: new Date(now - 30 * DAY_MS).toISOString() });
    const fresh = order();
    const producer = new KafkaProducer({ brokers, clientId: 'record-time-feed' });
    await producer.connect();
    await producer.sendBatch([
      { topic: t.raw, key: 'stale', value: Buffer.from(JSON.stringify(stale)), timestamp: now - 29 * DAY_MS, headers: { [HEADERS.producer]: 'direct' } },
      { topic: t.raw, key: 'fresh', value: Buffer.from(JSON.stringify(fresh)), timestamp: now - 29 * DAY_MS, headers: { [HEADERS.producer]: 'direct' } },
    ]);
    await producer.close();

    validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { VALIDATE_CHECK_THREAD: checkThread }));
    const out = await readTopics(brokers, [t.valid.orders, t.dlq], 2, 60_000);
    expect(out.map((m) => [m.topic, m.key?.toString()]).sort()).toEqual(
      [
        [t.dlq, 'stale'],
        [t.valid.orders, fresh.order_id],
      ].sort(),
    );
    const dead = out.find((m) => m.topic === t.dlq)!;
    expect(dead.headers[HEADERS.dlqReason].toString()).toBe('RULE_TIMESTAMP_EXPIRED');
    expect(JSON.parse(dead.value!.toString())).toEqual(stale);
  });
});
