import { CODES } from '@confluentinc/kafka-javascript';
import { BatchConsumer, consumerProperties, nextOffsets, partitionKey } from './consumer';
import type { ConsumedMessage, PartitionRef } from './types';

const msg = (partition: number, offset: number, topic = 't'): ConsumedMessage => ({ topic, partition, offset, key: null, value: null, headers: {}, size: 0 });

describe('consumerProperties', () => {
  it('never lets an override turn auto-commit or auto offset store back on', () => {
    const props = consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'], rdkafka: { 'enable.auto.commit': true, 'enable.auto.offset.store': true, 'isolation.level': 'read_uncommitted' } });
    expect(props).toMatchObject({ 'enable.auto.commit': false, 'enable.auto.offset.store': false, 'isolation.level': 'read_committed', 'group.id': 'g' });
  });

  it('looks for subscribed topics that do not exist yet every 30 s, not librdkafka\'s 5 minutes, unless told otherwise', () => {
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'] })['topic.metadata.refresh.interval.ms']).toBe(30_000);
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'], rdkafka: { 'topic.metadata.refresh.interval.ms': 60_000 } })['topic.metadata.refresh.interval.ms']).toBe(60_000);
  });

  it('postpones fetches past a full prefetch queue by 20 ms, not librdkafka\'s 1 s, unless told otherwise', () => {
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'] })['fetch.queue.backoff.ms']).toBe(20);
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'], fetchBackoffMs: 200 })['fetch.queue.backoff.ms']).toBe(200);
  });
});

describe('partitionKey', () => {
  it('is one string per topic-partition, distinct across topics and partitions', () => {
    const a = partitionKey({ topic: 't', partition: 3 });
    expect(partitionKey({ topic: 't', partition: 3 })).toBe(a);
    expect(new Set([a, partitionKey({ topic: 't', partition: 4 }), partitionKey({ topic: 'u', partition: 3 }), partitionKey({ topic: 't3', partition: 0 })]).size).toBe(4);
    // Not a partition index (librdkafka's -1 "unassigned"): still a distinct key, not cached.
    expect(partitionKey({ topic: 't', partition: -1 })).toBe('t\u0000-1');
  });
});

describe('nextOffsets', () => {
  it('gives the highest offset + 1 per partition, whatever the order', () => {
    expect(nextOffsets([msg(0, 5), msg(1, 2), msg(0, 3), msg(0, 9), msg(1, 1), msg(0, 4, 'u')])).toEqual([
      { topic: 't', partition: 0, offset: 10 },
      { topic: 't', partition: 1, offset: 3 },
      { topic: 'u', partition: 0, offset: 5 },
    ]);
    expect(nextOffsets([])).toEqual([]);
  });
});

describe('BatchConsumer batches by bytes (scripted native client)', () => {
  type Raw = { topic: string; partition: number; offset: number; value: Buffer; size: number; key: null; timestamp: number };
  const raw = (partition: number, offset: number, size = 100): Raw => ({ topic: 't', partition, offset, value: Buffer.alloc(size), size, key: null, timestamp: 0 });
  const range = (partition: number, from: number, to: number) => Array.from({ length: to - from }, (_, i) => raw(partition, from + i));

  /** A consumer holding partitions 0 and 1, whose native calls answer from `script`, one entry per consume call. */
  function scripted(script: Array<Raw[] | Error | (() => Raw[])>, { cooperative = false, maxBatchWaitMs = 5 } = {}) {
    const consumer = new BatchConsumer({ brokers: 'a:1', groupId: 'g', topics: ['t'], maxBatchMessages: 1000, maxBatchBytes: 300, maxBatchWaitMs });
    const calls: Array<{ count: number; timeoutMs: number }> = [];
    let timeoutMs = -1;
    Object.assign(consumer.native, {
      setDefaultConsumeTimeout: (ms: number) => (timeoutMs = ms),
      consume: (count: number, cb: (err: unknown, messages?: Raw[]) => void) => {
        calls.push({ count, timeoutMs });
        const next = script.shift() ?? [];
        if (next instanceof Error) return cb(next);
        cb(null, typeof next === 'function' ? next() : next);
      },
      rebalanceProtocol: () => (cooperative ? 'COOPERATIVE' : 'EAGER'),
      unassign: () => undefined,
      incrementalUnassign: () => undefined,
      position: (parts: Array<{ topic: string; partition: number }>) => parts.map((p) => ({ ...p, offset: 10 })),
      getWatermarkOffsets: () => ({ lowOffset: 0, highOffset: 12 }),
    });
    const internals = consumer as unknown as { connected: boolean; assigned: Map<string, PartitionRef>; queueRebalance(err: unknown, partitions: PartitionRef[]): void };
    internals.connected = true;
    for (const partition of [0, 1]) internals.assigned.set(partitionKey({ topic: 't', partition }), { topic: 't', partition });
    return { consumer, calls, revoke: (partitions: PartitionRef[]) => internals.queueRebalance({ code: CODES.ERRORS.ERR__REVOKE_PARTITIONS }, partitions) };
  }
  const offsets = (batch: ConsumedMessage[]) => batch.map((m) => `${m.partition}:${m.offset}`);

  // A rebalance that reached JS after the last poll applied it was dropped at close: librdkafka's
  // close waits for a revoke's acknowledgement, and for a lost assignment it never asks again.
  it('acknowledges a rebalance still queued at close, in order, before leaving the group', async () => {
    const { consumer, revoke } = scripted([range(0, 0, 2)]);
    const native: string[] = [];
    Object.assign(consumer.native, {
      unassign: () => native.push('unassign'),
      unsubscribe: () => native.push('unsubscribe'),
      disconnect: (cb: (err: unknown) => void) => (native.push('disconnect'), cb(null)),
    });
    await consumer.poll();
    revoke([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
    await consumer.close();
    expect(native).toEqual(['unassign', 'unsubscribe', 'disconnect']);
  });

  it('acknowledges a queued assignment incrementally under COOPERATIVE (librdkafka refuses the eager call)', async () => {
    const { consumer } = scripted([range(0, 0, 2)], { cooperative: true });
    const native: string[] = [];
    Object.assign(consumer.native, {
      assign: () => {
        throw new Error('Changes to the current assignment must be made using incremental_assign() when rebalance protocol type is COOPERATIVE');
      },
      incrementalAssign: (parts: PartitionRef[]) => native.push(`incrementalAssign ${parts.map((p) => p.partition).join(',')}`),
      incrementalUnassign: () => native.push('incrementalUnassign'),
      unsubscribe: () => native.push('unsubscribe'),
      disconnect: (cb: (err: unknown) => void) => (native.push('disconnect'), cb(null)),
    });
    await consumer.poll();
    (consumer as unknown as { queueRebalance(err: unknown, partitions: PartitionRef[]): void }).queueRebalance({ code: CODES.ERRORS.ERR__ASSIGN_PARTITIONS }, [{ topic: 't', partition: 2 }]);
    await consumer.close();
    expect(native).toEqual(['incrementalAssign 2', 'unsubscribe', 'disconnect']);
  });

  // The client's `size` is the value's alone: records with a tiny value and a large key or headers
  // passed the byte bound by thousands.
  it('counts keys and headers toward the byte bound, not only values', async () => {
    const heavy = (offset: number, part: 'key' | 'headers') => ({
      ...raw(0, offset, 1),
      ...(part === 'key' ? { key: Buffer.alloc(150) } : { headers: [{ h: Buffer.alloc(140) }] }),
    });
    const { consumer } = scripted([[heavy(0, 'key'), heavy(1, 'key'), heavy(2, 'key'), heavy(3, 'headers'), heavy(4, 'headers'), heavy(5, 'headers')] as unknown as Raw[]]);
    expect(offsets(await consumer.poll())).toEqual(['0:0', '0:1']);
    expect(offsets(await consumer.poll())).toEqual(['0:2', '0:3', '0:4']);
  });

  it('counts header names and string values in UTF-8 bytes, not UTF-16 units', async () => {
    // 40 three-byte characters: 120 bytes, 40 units. Two such names and values pass 300 bytes.
    const wide = '\u20ac'.repeat(40);
    const named = (offset: number) => ({ ...raw(0, offset, 1), headers: [{ [wide]: wide }] });
    const { consumer } = scripted([[named(0), named(1), named(2)] as unknown as Raw[]]);
    expect(offsets(await consumer.poll())).toEqual(['0:0', '0:1']);
    expect(offsets(await consumer.poll())).toEqual(['0:2']);
  });

  it('ends a batch at the message that reaches the bound and hands the rest out next, in order', async () => {
    const { consumer, calls } = scripted([range(0, 0, 10)]);
    expect(offsets(await consumer.poll())).toEqual(['0:0', '0:1', '0:2']);
    expect(offsets(await consumer.poll())).toEqual(['0:3', '0:4', '0:5']);
    // A poll served from the carry still makes one native call (no wait, one message), which is
    // where librdkafka serves rebalances and resets max.poll.interval.ms.
    expect(calls[1]).toEqual({ count: 1, timeoutMs: 0 });
    expect(offsets(await consumer.poll())).toEqual(['0:6', '0:7', '0:8']);
    expect(offsets(await consumer.poll())).toEqual(['0:9']);
    // Later native calls ask for about as many messages as the bound has room for.
    expect(calls.at(-1)?.count).toBe(2);
  });

  it('a poll that fails keeps what it had taken: nothing librdkafka already handed over is lost', async () => {
    const gone = Object.assign(new Error('Subscribed topic not available: t: Broker: Unknown topic or partition'), { code: CODES.ERRORS.ERR_UNKNOWN_TOPIC_OR_PART });
    const { consumer } = scripted([range(0, 0, 4), gone, []]);
    expect(offsets(await consumer.poll())).toEqual(['0:0', '0:1', '0:2']);
    // It had taken 0:3 from the carry. The rejection is librdkafka's error, translated.
    await expect(consumer.poll()).rejects.toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND', details: { operation: 'consumer.poll' } });
    expect(offsets(await consumer.poll())).toEqual(['0:3']);
  });

  // The revoke empties part of a full batch, so the poll goes on filling it: partition 1's newer
  // message was taken while its older ones waited in the carry, and the batch's offsets (1@6)
  // committed past records not handed out yet.
  it("a partition's messages leave in order, without a gap, when a revoke makes room in a full batch", async () => {
    const { consumer, revoke } = scripted([[...range(0, 0, 4), ...range(1, 0, 4)], () => (revoke([{ topic: 't', partition: 0 }]), [raw(1, 4)]), [raw(1, 5)]], { cooperative: true, maxBatchWaitMs: 500 });
    const batches: string[][] = [];
    for (let i = 0; i < 4; i++) batches.push(offsets(await consumer.poll()));
    expect(batches).toEqual([['0:0', '0:1', '0:2'], ['1:0', '1:1'], ['1:2', '1:3', '1:4'], ['1:5']]);
  });

  it('a revoke applied during a poll drops that partition from the batch it was filling', async () => {
    const { consumer, revoke } = scripted([[...range(0, 0, 4), ...range(1, 0, 4)], () => (revoke([{ topic: 't', partition: 0 }]), [])], { cooperative: true });
    expect(offsets(await consumer.poll())).toEqual(['0:0', '0:1', '0:2']);
    // The next poll takes 0:3, 1:0 and 1:1 from the carry; the revoke arrives with its native call.
    expect(offsets(await consumer.poll())).toEqual(['1:0', '1:1']);
    expect(offsets(await consumer.poll())).toEqual(['1:2', '1:3']);
  });

  it('lag counts carried-over messages as unread (librdkafka\'s position is past them)', async () => {
    const { consumer } = scripted([[...range(0, 0, 4), ...range(1, 0, 2)]]);
    await consumer.poll();
    // position() says 10 and the high watermark 12 for both partitions.
    expect(consumer.lag()).toEqual([
      { topic: 't', partition: 0, nextOffset: 3, highWatermark: 12, lag: 9 },
      { topic: 't', partition: 1, nextOffset: 0, highWatermark: 12, lag: 12 },
    ]);
  });
});
