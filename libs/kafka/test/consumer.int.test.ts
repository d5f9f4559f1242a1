import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { BatchConsumer, KAFKA_CHANNELS, KafkaAdmin, KafkaProducer, nextOffsets, type PartitionRef } from '../src';
import { createTestTopic, pollCount, pollFor, testBrokers, testConsumer, unique, waitForAssignment } from './helpers';

describe('BatchConsumer against the broker', () => {
  const brokers = testBrokers();
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  const producer = new KafkaProducer({ brokers });
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    await producer.connect();
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await producer.close();
    await admin.close();
  });

  async function fill(topic: string, count: number, partition?: number, tag = 'm'): Promise<void> {
    await producer.sendBatch(Array.from({ length: count }, (_, i) => ({ topic, partition, key: `k${i}`, value: `${tag}-${i}` })));
  }

  // Subscribed before its topic existed (a service started before the topics were provisioned),
  // the consumer found the topic only at librdkafka's 5-minute metadata refresh.
  it('is assigned a topic created after it subscribed within the 30 s metadata refresh', async () => {
    const topic = unique('t-late');
    const consumer = await testConsumer([topic], { maxBatchWaitMs: 500, autoOffsetReset: 'earliest' });
    closers.push(() => consumer.close());
    // Until the topic is known, a poll may report it missing (retryable); nothing else is expected.
    const got: string[] = [];
    const pollOnce = async () => {
      try {
        got.push(...(await consumer.poll()).map((m) => String(m.value)));
      } catch (err) {
        if ((err as { code?: string }).code !== 'KAFKA_TOPIC_NOT_FOUND') throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await pollOnce();
    await admin.createTopic({ name: topic, partitions: 1 });
    await fill(topic, 3);
    const deadline = Date.now() + 45_000;
    while (got.length < 3 && Date.now() < deadline) await pollOnce();
    expect(got).toEqual(['m-0', 'm-1', 'm-2']);
  }, 60_000);

  it('bounds batches by count and by time', async () => {
    const topic = await createTestTopic(admin, 2);
    await fill(topic, 230);
    const consumer = await testConsumer([topic], { maxBatchMessages: 50, maxBatchWaitMs: 1_000 });
    closers.push(() => consumer.close());
    const sizes: number[] = [];
    let total = 0;
    const deadline = Date.now() + 20_000;
    while (total < 230 && Date.now() < deadline) {
      const batch = await consumer.poll();
      if (batch.length > 0) sizes.push(batch.length);
      total += batch.length;
    }
    expect(total).toBe(230);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(50);
    expect(sizes.filter((s) => s === 50).length).toBeGreaterThanOrEqual(1);
    // nothing left: poll returns an empty batch after about maxBatchWaitMs
    const t = Date.now();
    expect(await consumer.poll()).toEqual([]);
    expect(Date.now() - t).toBeGreaterThanOrEqual(950);
    expect(Date.now() - t).toBeLessThan(6_000); // generous: the CI machine is shared
  });

  it('bounds batches by bytes: the rest of a fetch waits for a later poll, in order, held while paused, dropped by a seek', async () => {
    const topic = await createTestTopic(admin, 1);
    const recordBytes = 64 * 1024;
    const count = 40;
    // Incompressible values: a compressed fetch would hide how much one native call returns.
    await producer.sendBatch(Array.from({ length: count }, (_, i) => ({ topic, partition: 0, key: `k${i}`, value: randomBytes(recordBytes) })));
    const maxBatchBytes = 256 * 1024;
    // The count bound is out of reach and the wait long: only the byte bound ends a batch early.
    const consumer = await testConsumer([topic], { maxBatchMessages: 10_000, maxBatchBytes, maxBatchWaitMs: 1_500 });
    closers.push(() => consumer.close());
    const pollUntil = async (last: number) => {
      const batches: number[][] = [];
      const deadline = Date.now() + 30_000;
      while (batches.flat().at(-1) !== last && Date.now() < deadline) {
        const batch = await consumer.poll();
        if (batch.length > 0) batches.push(batch.map((m) => m.offset));
      }
      return batches;
    };
    const perBatch = maxBatchBytes / recordBytes;
    const first = await consumer.poll();
    expect(first.map((m) => m.offset)).toEqual(Array.from({ length: perBatch }, (_, i) => i));
    // The rest of that fetch is carried over: a pause holds it back, a resume delivers it next.
    consumer.pause([{ topic, partition: 0 }]);
    expect(await consumer.poll()).toEqual([]);
    consumer.resume([{ topic, partition: 0 }]);
    expect((await consumer.poll()).map((m) => m.offset)).toEqual(Array.from({ length: perBatch }, (_, i) => perBatch + i));
    // A rewind drops what is carried: nothing is delivered twice.
    await consumer.seek({ topic, partition: 0, offset: 1 });
    const batches = await pollUntil(count - 1);
    expect(batches.flat()).toEqual(Array.from({ length: count - 1 }, (_, i) => i + 1));
    // Each batch stops at the first message that reaches the bound.
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(perBatch);
  });

  it('commits explicit offsets; a new member of the group resumes after them', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 40);
    const groupId = unique('g');
    const first = await testConsumer([topic], { groupId, maxBatchMessages: 15 });
    const batch = await pollCount(first, 1);
    const upTo = batch.slice(0, 15);
    await first.commit(nextOffsets(upTo));
    expect(await first.committed()).toEqual([{ topic, partition: 0, offset: upTo[upTo.length - 1].offset + 1 }]);
    await first.close();

    const second = await testConsumer([topic], { groupId });
    closers.push(() => second.close());
    const rest = await pollCount(second, 40 - upTo.length);
    expect(rest[0].offset).toBe(upTo[upTo.length - 1].offset + 1);
    expect(rest.map((m) => m.value?.toString())).toEqual(Array.from({ length: 40 - upTo.length }, (_, i) => `m-${i + upTo.length}`));
  });

  it('publishes a commit the broker refused, which commit() itself cannot report (it resolves once queued)', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 5);
    const consumer = await testConsumer([topic], { groupId: unique('g') });
    closers.push(() => consumer.close());
    await pollCount(consumer, 5);
    const errors: Array<{ code: string; message: string }> = [];
    const committed: unknown[] = [];
    const onError = (m: unknown) => errors.push(m as { code: string; message: string });
    const onCommitted = (m: unknown) => committed.push(m);
    diagnostics.subscribe(KAFKA_CHANNELS.clientError, onError);
    diagnostics.subscribe(KAFKA_CHANNELS.offsetsCommitted, onCommitted);
    try {
      // A partition the topic does not have: queued without complaint, refused by the broker.
      await expect(consumer.commit([{ topic, partition: 7, offset: 3 }])).resolves.toBeUndefined();
      const deadline = Date.now() + 20_000;
      while (!errors.some((e) => /consumer\.commit/.test(e.message)) && Date.now() < deadline) await consumer.poll();
      expect(errors.filter((e) => /consumer\.commit/.test(e.message))).toEqual([expect.objectContaining({ code: expect.stringMatching(/^KAFKA_/) })]);
      expect(committed).toEqual([]);
      // One the broker takes is published as committed.
      await consumer.commit([{ topic, partition: 0, offset: 5 }]);
      const until = Date.now() + 20_000;
      while (committed.length === 0 && Date.now() < until) await consumer.poll();
      expect(committed).toEqual([expect.objectContaining({ offsets: [{ topic, partition: 0, offset: 5 }], transactional: false })]);
    } finally {
      diagnostics.unsubscribe(KAFKA_CHANNELS.clientError, onError);
      diagnostics.unsubscribe(KAFKA_CHANNELS.offsetsCommitted, onCommitted);
    }
  });

  it('pause stops delivery of a partition and resume restarts it', async () => {
    const topic = await createTestTopic(admin, 2);
    const consumer = await testConsumer([topic], { maxBatchMessages: 1000 });
    closers.push(() => consumer.close());
    await waitForAssignment(consumer);
    const p0: PartitionRef = { topic, partition: 0 };
    consumer.pause([p0]);
    expect(consumer.paused()).toEqual([p0]);
    await fill(topic, 20, 0, 'p0');
    await fill(topic, 20, 1, 'p1');
    const whilePaused = [...(await pollCount(consumer, 20)), ...(await pollFor(consumer, 1_000))];
    expect(whilePaused).toHaveLength(20);
    expect(whilePaused.every((m) => m.partition === 1)).toBe(true);
    consumer.resume([p0]);
    expect(consumer.paused()).toEqual([]);
    const afterResume = await pollCount(consumer, 20);
    expect(afterResume).toHaveLength(20);
    expect(afterResume.every((m) => m.partition === 0)).toBe(true);
    expect(afterResume[0].offset).toBe(0);
  });

  // librdkafka keeps a partition's pause through an unassign and the next assign: a partition
  // paused when a rebalance took it came back paused while `paused()` said it was not, so a
  // resume of `paused()` never fetched it again (merge-compaction pauses every partition while
  // storage fails, and pods restart then).
  it('a partition paused when a rebalance takes it comes back fetched', async () => {
    const topic = await createTestTopic(admin, 1);
    const other = await createTestTopic(admin, 1);
    const groupId = unique('g');
    await fill(topic, 3, 0, 'before');
    let revokes = 0;
    const a = new BatchConsumer({ brokers, groupId, topics: [topic], sessionTimeoutMs: 6000, onRevoke: () => void revokes++ });
    closers.push(() => a.close());
    await a.connect();
    expect(await pollCount(a, 3)).toHaveLength(3);
    const p0: PartitionRef = { topic, partition: 0 };
    a.pause([p0]);
    // A member on another topic joins the group: an eager rebalance takes p0 from a and gives it back.
    const b = new BatchConsumer({ brokers, groupId, topics: [other], sessionTimeoutMs: 6000 });
    closers.push(() => b.close());
    await b.connect();
    const got: string[] = [];
    const pollBoth = async () => {
      const [batch] = await Promise.all([a.poll(), b.poll()]);
      got.push(...batch.map((m) => String(m.value)));
    };
    const deadline = Date.now() + 30_000;
    while ((revokes === 0 || a.assignment().length === 0 || b.assignment().length === 0) && Date.now() < deadline) await pollBoth();
    expect(revokes).toBeGreaterThan(0);
    expect(a.assignment()).toEqual([p0]);
    expect(a.paused()).toEqual([]);
    await fill(topic, 3, 0, 'after');
    // Nothing was committed, so the partition is read from its start again, then the new records.
    const until = Date.now() + 20_000;
    while (got.length < 6 && Date.now() < until) await pollBoth();
    expect(got).toEqual(['before-0', 'before-1', 'before-2', 'after-0', 'after-1', 'after-2']);
  });

  it('fires onAssign/onRevoke with partition lists when a second member joins, and starts from the offsets onAssign returns', async () => {
    const topic = await createTestTopic(admin, 4);
    for (let p = 0; p < 4; p++) await fill(topic, 10, p, `p${p}`);
    const groupId = unique('g');
    const log: string[] = [];
    // The "table" stores offsets: resume partition p at offset 2p (so 10 - 2p messages remain).
    const stored = (parts: PartitionRef[]) => parts.map((p) => ({ ...p, offset: 2 * p.partition }));
    const hooks = (name: string) => ({
      onAssign: (parts: PartitionRef[]) => {
        log.push(`${name} assign ${parts.map((p) => p.partition).sort().join(',')}`);
        return stored(parts);
      },
      onRevoke: (parts: PartitionRef[]) => {
        log.push(`${name} revoke ${parts.map((p) => p.partition).sort().join(',')}`);
      },
    });
    const a = new BatchConsumer({ brokers, groupId, topics: [topic], sessionTimeoutMs: 6000, ...hooks('a') });
    closers.push(() => a.close());
    await a.connect();
    const firstRound = await pollCount(a, 40 - 12);
    expect(log).toEqual(['a assign 0,1,2,3']);
    expect(firstRound).toHaveLength(28);
    for (const m of firstRound) expect(m.offset).toBeGreaterThanOrEqual(2 * m.partition);

    const b = new BatchConsumer({ brokers, groupId, topics: [topic], sessionTimeoutMs: 6000, ...hooks('b') });
    closers.push(() => b.close());
    await b.connect();
    const deadline = Date.now() + 30_000;
    while ((a.assignment().length === 0 || b.assignment().length === 0 || a.assignment().length === 4) && Date.now() < deadline) {
      await Promise.all([a.poll(), b.poll()]);
    }
    expect(log).toContain('a revoke 0,1,2,3');
    expect(a.assignment().length + b.assignment().length).toBe(4);
    const bParts = b.assignment().map((p) => p.partition).sort();
    expect(bParts.length).toBeGreaterThan(0); // or the offset checks below check nothing
    expect(log).toContain(`b assign ${bParts.join(',')}`);
    // b starts each of its partitions from the stored offset, not from the group's (empty) commits
    const bGot = await pollCount(b, bParts.reduce((n, p) => n + 10 - 2 * p, 0));
    for (const p of bParts) {
      const offsets = bGot.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets[0]).toBe(2 * p);
    }
  });

  it('fetchAhead takes what is fetched without handing it out: lag still counts it, the next polls deliver it in order, a seek drops it', async () => {
    const topic = await createTestTopic(admin, 2);
    for (const partition of [0, 1]) await producer.sendBatch(Array.from({ length: 30 }, (_, i) => ({ topic, partition, key: `k${i}`, value: `p${partition}-${i}` })));
    const consumer = await testConsumer([topic], { maxBatchMessages: 10 });
    closers.push(() => consumer.close());
    const first = await pollCount(consumer, 1);
    // librdkafka's read positions: past what it handed to JS, carried messages included.
    const handedOut = () => consumer.native.position(consumer.assignment()).reduce((n, p) => n + Math.max(0, p.offset ?? 0), 0);
    expect(handedOut()).toBe(first.length);
    const deadline = Date.now() + 10_000;
    while (handedOut() < first.length + 10 && Date.now() < deadline) await consumer.fetchAhead();
    // At most about a batch waits: one more call takes nothing.
    expect(handedOut()).toBe(first.length + 10);
    await consumer.fetchAhead();
    expect(handedOut()).toBe(first.length + 10);
    // Lag counts them as unread: each partition's next offset is the first one not polled.
    for (const l of consumer.lag()) expect(l.nextOffset).toBe(first.filter((m) => m.partition === l.partition).length);
    // Rewinding partition 0 drops what was fetched ahead of it; partition 1's is delivered, in order.
    await consumer.seek({ topic, partition: 0, offset: 0 });
    const fromFirst = first.filter((m) => m.partition === 1);
    const seen = [...fromFirst, ...(await pollCount(consumer, 60 - fromFirst.length))];
    for (const partition of [0, 1]) {
      expect(seen.filter((m) => m.partition === partition).map((m) => m.offset)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    }
    expect(await pollFor(consumer, 500)).toEqual([]);
  });

  it('seek moves the read position back', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 10);
    const consumer = await testConsumer([topic]);
    closers.push(() => consumer.close());
    const all = await pollCount(consumer, 10);
    expect(all).toHaveLength(10);
    await consumer.seek({ topic, partition: 0, offset: 6 });
    const again = await pollCount(consumer, 4);
    expect(again.map((m) => m.offset)).toEqual([6, 7, 8, 9]);
    expect(consumer.lag()).toEqual([{ topic, partition: 0, nextOffset: 10, highWatermark: 10, lag: 0 }]);
  });

  it('fails poll when onAssign throws, and reads nothing from a wrong position', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 5);
    const consumer = new BatchConsumer({
      brokers,
      groupId: unique('g'),
      topics: [topic],
      onAssign: () => {
        throw new Error('table unavailable');
      },
    });
    closers.push(() => consumer.close());
    await consumer.connect();
    let error: unknown;
    const deadline = Date.now() + 20_000;
    while (error === undefined && Date.now() < deadline) {
      try {
        expect(await consumer.poll()).toEqual([]);
      } catch (err) {
        error = err;
      }
    }
    expect(error).toMatchObject({ code: 'KAFKA_UNKNOWN', retryable: false, message: expect.stringContaining('table unavailable') });
    expect(consumer.assignment()).toEqual([]);
  });

  /** A consumer that read the 3 records of a new topic, then paused it while 5 more arrived. */
  async function pausedBehindFive() {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 3);
    const consumer = await testConsumer([topic]);
    closers.push(() => consumer.close());
    await pollCount(consumer, 3);
    consumer.pause([{ topic, partition: 0 }]);
    await fill(topic, 5);
    return { topic, consumer };
  }

  // Lag was published only with a non-empty batch: with every partition paused (merge-compaction
  // under a storage outage) polls came back empty and the gauge froze as lag grew.
  it('publishes the lag of a paused partition while its polls come back empty', async () => {
    const lags: { topic: string; lag: number }[] = [];
    const listener = (m: unknown) => void lags.push(m as { topic: string; lag: number });
    diagnostics.subscribe(KAFKA_CHANNELS.lag, listener);
    try {
      const { topic, consumer } = await pausedBehindFive();
      const deadline = Date.now() + 20_000;
      while (!lags.some((l) => l.topic === topic && l.lag === 5) && Date.now() < deadline) expect(await consumer.poll()).toEqual([]);
      expect(lags.filter((l) => l.topic === topic).map((l) => l.lag)).toContain(5);
    } finally {
      diagnostics.unsubscribe(KAFKA_CHANNELS.lag, listener);
    }
  });

  // merge-compaction's waiting gauge reads lag() while tier 1 is paused (storage outage). With
  // nobody subscribed to the lag channel no watermark is asked of the broker: lag() relies on
  // librdkafka keeping a paused partition's cached watermark current, which this holds it to.
  it('lag() follows a paused partition with nobody subscribed to the lag channel', async () => {
    expect(diagnostics.channel(KAFKA_CHANNELS.lag).hasSubscribers).toBe(false);
    const { topic, consumer } = await pausedBehindFive();
    const deadline = Date.now() + 20_000;
    while (consumer.lag()[0]?.lag !== 5 && Date.now() < deadline) expect(await consumer.poll()).toEqual([]);
    expect(consumer.lag()).toEqual([{ topic, partition: 0, nextOffset: 3, highWatermark: 8, lag: 5 }]);
  });

  it('runs onAssign again on the next poll after it failed, then reads from the offsets it returns', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 5);
    let calls = 0;
    const consumer = new BatchConsumer({
      brokers,
      groupId: unique('g'),
      topics: [topic],
      onAssign: (parts: PartitionRef[]) => {
        if (++calls === 1) throw new Error('table unavailable');
        return parts.map((p) => ({ ...p, offset: 2 }));
      },
    });
    closers.push(() => consumer.close());
    await consumer.connect();
    const offsets: number[] = [];
    let failures = 0;
    const deadline = Date.now() + 30_000;
    while (offsets.length < 3 && Date.now() < deadline) {
      try {
        offsets.push(...(await consumer.poll()).map((m) => m.offset));
      } catch (err) {
        expect(err).toMatchObject({ message: expect.stringContaining('table unavailable') });
        failures += 1;
      }
    }
    expect(failures).toBe(1);
    expect(calls).toBe(2);
    expect(offsets).toEqual([2, 3, 4]);
  });

  it('run hands each non-empty batch to the handler until stop(), and poll still works after', async () => {
    const topic = await createTestTopic(admin, 2);
    await fill(topic, 30);
    const consumer = await testConsumer([topic], { maxBatchMessages: 7 });
    closers.push(() => consumer.close());
    const seen: number[] = [];
    await consumer.run(async (batch) => {
      expect(batch.length).toBeGreaterThan(0);
      expect(batch.length).toBeLessThanOrEqual(7);
      seen.push(...batch.map((m) => Number(m.value?.toString().slice(2))));
      await consumer.commit(nextOffsets(batch));
      if (seen.length >= 30) consumer.stop();
    });
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await fill(topic, 1, 0, 'late');
    const late = await pollCount(consumer, 1);
    expect(late.map((m) => m.value?.toString())).toEqual(['late-0']);
  });

  it('run rejects with the handler error and commits nothing it was not told to', async () => {
    const topic = await createTestTopic(admin, 1);
    await fill(topic, 5);
    const consumer = await testConsumer([topic]);
    closers.push(() => consumer.close());
    await expect(
      consumer.run(() => {
        throw new Error('handler failed');
      }),
    ).rejects.toThrow('handler failed');
    expect(await consumer.committed()).toEqual([{ topic, partition: 0, offset: null }]);
  });

  it('close runs onRevoke for the partitions still held and is idempotent', async () => {
    const topic = await createTestTopic(admin, 2);
    const revoked: number[] = [];
    const consumer = await testConsumer([topic], { onRevoke: (parts) => void revoked.push(...parts.map((p) => p.partition)) });
    await waitForAssignment(consumer);
    await consumer.close();
    await consumer.close();
    expect(revoked.sort()).toEqual([0, 1]);
    await expect(consumer.poll()).rejects.toMatchObject({ code: 'KAFKA_NOT_CONNECTED' });
  });
});
