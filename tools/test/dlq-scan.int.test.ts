import { randomBytes } from 'node:crypto';
import { KafkaAdmin, KafkaProducer } from '@sluice/kafka';
import { scanTopic } from '../src/dlq/read-dlq';
import { kafkaSecurityFromEnv } from '@sluice/kafka';
import { testBrokers, testSecureKafka } from './support/env';

// The DLQ tool scans the topic instead of loading it: a partition whose records have all expired
// must not hold the scan until its timeout, and `show` reads one partition from one offset.
describe('DLQ scan', () => {
  const brokers = testBrokers();
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  const topic = `dlq-scan-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    await admin.createTopic({ name: topic, partitions: 3 });
    const producer = new KafkaProducer({ brokers });
    await producer.connect();
    try {
      await producer.sendBatch([
        ...Array.from({ length: 4 }, (_, i) => ({ topic, partition: 0, key: `a${i}`, value: Buffer.from(`p0-${i}`) })),
        ...Array.from({ length: 2 }, (_, i) => ({ topic, partition: 1, key: `b${i}`, value: Buffer.from(`p1-${i}`) })),
      ]);
    } finally {
      await producer.close();
    }
    // Partition 1 emptied as retention would: its start offset moves to its end (2).
    const native = (admin as unknown as { native: { deleteRecords(r: unknown[], o: object, cb: (err: unknown) => void): void } }).native;
    await new Promise<void>((resolve, reject) => native.deleteRecords([{ topic, partition: 1, offset: -1 }], {}, (err) => (err ? reject(err) : resolve())));
    expect((await admin.fetchStartOffsets([{ topic, partition: 1 }], false)).get(`${topic}:1`)).toBe(2);
  }, 60_000);

  afterAll(async () => {
    await admin.close();
  });

  it('reads every record still held and does not wait on an emptied partition', async () => {
    const seen: string[] = [];
    const started = Date.now();
    await scanTopic(brokers, topic, { isolation: 'read_uncommitted', idleTimeoutMs: 20_000 }, (m) => void seen.push(`${m.partition}:${m.offset}:${m.value?.toString()}`));
    expect(seen.sort()).toEqual(['0:0:p0-0', '0:1:p0-1', '0:2:p0-2', '0:3:p0-3']);
    // The emptied partition would have held the scan until its idle timeout.
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 60_000);

  it('reads one partition from one offset, and stops when told to', async () => {
    const seen: string[] = [];
    await scanTopic(brokers, topic, { isolation: 'read_uncommitted', idleTimeoutMs: 20_000, ranges: new Map([[0, { from: 2, to: 3 }]]) }, (m) => {
      seen.push(`${m.partition}:${m.offset}`);
      return false;
    });
    expect(seen).toEqual(['0:2']);
  }, 60_000);

  // `--at 0:1 --at 0:2` read the whole topic to find two records.
  it('reads only the offsets of the ranges it is given, and ends there', async () => {
    const seen: string[] = [];
    await scanTopic(brokers, topic, { isolation: 'read_uncommitted', idleTimeoutMs: 20_000, ranges: new Map([[0, { from: 1, to: 2 }]]) }, (m) => void seen.push(`${m.partition}:${m.offset}`));
    expect(seen).toEqual(['0:1', '0:2']);
    // A range past what the partition holds, and one on an emptied partition: nothing, at once.
    const none: string[] = [];
    await scanTopic(brokers, topic, { isolation: 'read_uncommitted', idleTimeoutMs: 20_000, ranges: new Map([[0, { from: 9, to: 12 }], [1, { from: 0, to: 1 }]]) }, (m) => void none.push(`${m.partition}:${m.offset}`));
    expect(none).toEqual([]);
  }, 60_000);

  it('reads a secured cluster with the KAFKA_* security settings', async () => {
    const secure = testSecureKafka();
    const seen: string[] = [];
    await scanTopic(secure.brokers, topic, { isolation: 'read_uncommitted', idleTimeoutMs: 20_000, security: kafkaSecurityFromEnv(secure.env) }, (m) => void seen.push(`${m.partition}:${m.offset}`));
    expect(seen.sort()).toEqual(['0:0', '0:1', '0:2', '0:3']);
  }, 60_000);
});
