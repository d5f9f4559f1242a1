import diagnostics from 'node:diagnostics_channel';
import { KAFKA_CHANNELS, KafkaAdmin, KafkaProducer, partitionForKey, type KafkaError, type ProducerQueueEvent } from '../src';
import { createTestTopic, pollCount, testBrokers, testConsumer } from './helpers';

describe('KafkaProducer against the broker', () => {
  const brokers = testBrokers();
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  const producer = new KafkaProducer({ brokers, clientId: 'producer-test', unknownTopicTimeoutMs: 1500 });
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    await producer.connect();
  });
  afterAll(async () => {
    for (const close of closers) await close();
    await producer.close();
    await admin.close();
  });

  it('publishes its queue depth as a send enqueues and as it settles', async () => {
    const topic = await createTestTopic(admin, 1);
    const seen: ProducerQueueEvent[] = [];
    const listener = (m: unknown) => seen.push(m as ProducerQueueEvent);
    diagnostics.subscribe(KAFKA_CHANNELS.producerQueue, listener);
    try {
      await producer.sendBatch(Array.from({ length: 50 }, (_, i) => ({ topic, key: `k-${i}`, value: `v-${i}` })));
    } finally {
      diagnostics.unsubscribe(KAFKA_CHANNELS.producerQueue, listener);
    }
    expect(seen).toEqual([
      { clientId: 'producer-test', depth: 50 },
      { clientId: 'producer-test', depth: 0 },
    ]);
  });

  it('round-trips keys, values, headers and tombstones, resolving with broker offsets', async () => {
    const topic = await createTestTopic(admin, 3);
    const records = Array.from({ length: 200 }, (_, i) => ({
      topic,
      key: `k-${i % 17}`,
      value: i === 7 ? null : JSON.stringify({ i }),
      headers: { trace: `t-${i}`, bin: Buffer.from([0, 255, i % 256]) },
    }));
    const reports = await producer.sendBatch(records);
    expect(reports).toHaveLength(200);
    for (const r of reports) expect(r.offset).toBeGreaterThanOrEqual(0);
    expect(producer.queueDepth).toBe(0);

    const consumer = await testConsumer([topic]);
    closers.push(() => consumer.close());
    const got = await pollCount(consumer, 200);
    expect(got).toHaveLength(200);
    const byTrace = new Map(got.map((m) => [m.headers.trace.toString(), m]));
    records.forEach((rec, i) => {
      const m = byTrace.get(`t-${i}`);
      expect(m).toBeDefined();
      expect(m?.key?.toString()).toBe(rec.key);
      expect(m?.value === null ? null : m?.value.toString()).toBe(rec.value);
      expect(m?.headers.bin.equals(Buffer.from([0, 255, i % 256]))).toBe(true);
      expect(m?.partition).toBe(reports[i].partition);
      expect(m?.offset).toBe(reports[i].offset);
    });
  });

  // Headers were read into one value per name, so a repeated name lost all but its last value
  // wherever a record was copied whole (the DLQ, its replay).
  it('round-trips a repeated header name with every value in order, and a header named like an Object method', async () => {
    const topic = await createTestTopic(admin, 1);
    await producer.sendBatch([
      { topic, value: 'repeats', headers: { tag: ['a', Buffer.from('b'), 'c'], constructor: 'x', toString: 'y' } },
      { topic, value: 'plain', headers: { tag: 'only' } },
    ]);
    const consumer = await testConsumer([topic]);
    closers.push(() => consumer.close());
    const [repeats, plain] = await pollCount(consumer, 2);
    expect(repeats.headers.tag.toString()).toBe('c');
    expect(repeats.repeatedHeaders?.tag.map(String)).toEqual(['a', 'b', 'c']);
    expect(Object.keys(repeats.repeatedHeaders ?? {})).toEqual(['tag']);
    // A first `constructor` header is not taken for a repeat of the inherited one.
    expect(Object.keys(repeats.headers).sort()).toEqual(['constructor', 'tag', 'toString']);
    expect(repeats.headers.constructor.toString()).toBe('x');
    expect(plain.headers.tag.toString()).toBe('only');
    expect(plain.repeatedHeaders).toBeUndefined();
  });

  it('puts every key on the partition the Java murmur2 partitioner picks', async () => {
    const partitions = 7;
    const topic = await createTestTopic(admin, partitions);
    const keys = Array.from({ length: 600 }, (_, i) => (i % 3 === 0 ? `order-${i}` : i % 3 === 1 ? `ключ-${i}` : `${i * 7919}`));
    // each key twice, in two separate batches: the same key must land on the same partition
    const first = await producer.sendBatch(keys.map((key) => ({ topic, key, value: 'a' })));
    const second = await producer.sendBatch(keys.map((key) => ({ topic, key, value: 'b' })));
    const used = new Set<number>();
    keys.forEach((key, i) => {
      expect(first[i].partition).toBe(partitionForKey(key, partitions));
      expect(second[i].partition).toBe(first[i].partition);
      used.add(first[i].partition);
    });
    expect(used.size).toBe(partitions);
  });

  it('answers KAFKA_QUEUE_FULL (retryable) past its queue capacity, after the enqueued ones settled', async () => {
    const topic = await createTestTopic(admin, 1);
    const small = new KafkaProducer({ brokers, maxQueueMessages: 10, lingerMs: 200 });
    closers.push(() => small.close());
    await small.connect();
    expect(small.hasCapacity(10)).toBe(true);
    expect(small.hasCapacity(11)).toBe(false);
    const err = (await small.sendBatch(Array.from({ length: 50 }, (_, i) => ({ topic, value: `${i}` }))).catch((e) => e)) as KafkaError;
    expect(err.code).toBe('KAFKA_QUEUE_FULL');
    expect(err.retryable).toBe(true);
    expect(err.details).toMatchObject({ delivered: 10, failed: 0, notSent: 40 });
    expect(small.queueDepth).toBe(0);
    // the queue drained: the producer works again
    await expect(small.send({ topic, value: 'after' })).resolves.toMatchObject({ topic, partition: 0, offset: 10 });
  });

  it('fails a message to a missing topic with KAFKA_TOPIC_NOT_FOUND (retryable)', async () => {
    const err = (await producer.send({ topic: `missing-${Date.now()}`, value: 'x' }).catch((e) => e)) as KafkaError;
    expect(err.code).toBe('KAFKA_TOPIC_NOT_FOUND');
    expect(err.retryable).toBe(true);
    expect(err.cause).toBeDefined();
  });

  describe('sendBatchSettled (ingest needs per-record outcomes, sendBatch only gives the first error)', () => {
    it('reports each record: delivered ones with their offsets, a failed one with its error, in input order', async () => {
      const topic = await createTestTopic(admin, 1);
      const missing = `missing-${Date.now()}`;
      const outcomes = await producer.sendBatchSettled([
        { topic, value: 'a' },
        { topic: missing, value: 'lost' },
        { topic, value: 'b' },
      ]);
      expect(outcomes).toHaveLength(3);
      expect(outcomes[0]).toEqual({ ok: true, report: expect.objectContaining({ topic, partition: 0, offset: 0 }) });
      expect(outcomes[1]).toMatchObject({ ok: false, error: { code: 'KAFKA_TOPIC_NOT_FOUND', retryable: true } });
      expect(outcomes[2]).toEqual({ ok: true, report: expect.objectContaining({ topic, partition: 0, offset: 1 }) });
      expect(producer.queueDepth).toBe(0);
    });

    it('fails the records past a full queue with KAFKA_QUEUE_FULL, unsent, after the enqueued ones settled', async () => {
      const topic = await createTestTopic(admin, 1);
      const small = new KafkaProducer({ brokers, maxQueueMessages: 10, lingerMs: 200 });
      closers.push(() => small.close());
      await small.connect();
      const outcomes = await small.sendBatchSettled(Array.from({ length: 15 }, (_, i) => ({ topic, value: `${i}` })));
      expect(outcomes.slice(0, 10).map((o) => (o.ok ? o.report.offset : o.error.code))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (const o of outcomes.slice(10)) expect(o).toMatchObject({ ok: false, error: { code: 'KAFKA_QUEUE_FULL', retryable: true } });
      expect(small.queueDepth).toBe(0);
      expect(await small.sendBatchSettled([])).toEqual([]);
    });

    it('resolves (never rejects) with KAFKA_NOT_CONNECTED for every record after close', async () => {
      const p = new KafkaProducer({ brokers });
      await p.connect();
      await p.close();
      const outcomes = await p.sendBatchSettled([{ topic: 'x', value: 'y' }, { topic: 'x', value: 'z' }]);
      expect(outcomes).toHaveLength(2);
      for (const o of outcomes) expect(o).toMatchObject({ ok: false, error: { code: 'KAFKA_NOT_CONNECTED', retryable: false } });
    });
  });

  it('rejects send after close with KAFKA_NOT_CONNECTED', async () => {
    const p = new KafkaProducer({ brokers });
    await p.connect();
    await p.close();
    await p.close(); // idempotent
    await expect(p.send({ topic: 'x', value: 'y' })).rejects.toMatchObject({ code: 'KAFKA_NOT_CONNECTED', retryable: false });
  });
});
