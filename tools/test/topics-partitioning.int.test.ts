// The pipeline relies on one hash in three places: the producer's partitioner (librdkafka
// murmur2_random), @sluice/kafka's partitionForKey and @sluice/contracts' partitionOf/bucketOf
// (silver buckets). This checks all three agree on what the broker actually did.
import { randomBytes } from 'node:crypto';
import { SILVER_BUCKETS, VALID_TOPIC_PARTITIONS, bucketOf, partitionOf } from '@sluice/contracts';
import { KafkaAdmin, KafkaProducer, partitionForKey } from '@sluice/kafka';
import { testBrokers } from './support/env';

describe('valid-topic partitions and silver buckets agree with the broker', () => {
  const admin = new KafkaAdmin({ brokers: testBrokers(), requestTimeoutMs: 30_000 });
  const producer = new KafkaProducer({ brokers: testBrokers() });
  beforeAll(() => producer.connect());
  afterAll(async () => {
    await producer.close();
    await admin.close();
  });

  it('broker partition == kafka.partitionForKey == contracts.partitionOf, and bucket % partitions == partition', async () => {
    const topic = `it-part-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    await admin.createTopic({ name: topic, partitions: VALID_TOPIC_PARTITIONS });
    const keys = Array.from({ length: 400 }, (_, i) => (i % 2 === 0 ? `order-${i}` : `sku-${randomBytes(6).toString('hex')}|wh-${i % 9}`));
    const reports = await producer.sendBatch(keys.map((key) => ({ topic, key, value: 'x' })));
    keys.forEach((key, i) => {
      const broker = reports[i].partition;
      expect(partitionForKey(key, VALID_TOPIC_PARTITIONS)).toBe(broker);
      expect(partitionOf(key, VALID_TOPIC_PARTITIONS)).toBe(broker);
      expect(bucketOf(key, SILVER_BUCKETS) % VALID_TOPIC_PARTITIONS).toBe(broker);
    });
    expect(new Set(reports.map((r) => r.partition)).size).toBe(VALID_TOPIC_PARTITIONS);
  });
});
