import type { ConsumedMessage, OnAssign, OnRevoke, PartitionLag, TopicPartitionOffset } from '@sluice/kafka';
import { AvroDecoder, CONTRACTS, type AnyContract } from '@sluice/contracts';
import { SluiceError } from '@sluice/errors';
import { createTelemetry, sampleValue, type Telemetry } from '@sluice/telemetry';
import { mergeError } from '../errors';
import type { BronzeRecord } from './bronze-record';
import type { BronzeStore, PartitionCommit } from './bronze-store';
import { DeadLetters } from './dead-letters';
import { clickMessage, orderMessage, orderMessages, tier1TestOptions, until, untilAsync } from './tier1-test-options';
import { Tier1Worker, type Tier1Consumer, type Tier1ConsumerFactory } from './tier1-worker';

// Tier1Worker's write path with a scripted consumer and store: which records go into which
// bronze append, with which offsets.
describe('Tier1Worker writes', () => {
  const topic = 'test.orders.valid';
  const tp = { topic, partition: 0 };
  let telemetry: Telemetry;
  let worker: Tier1Worker | undefined;
  /** What the scripted consumer's lag() answers. */
  let lags: PartitionLag[] = [];

  beforeAll(() => {
    telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
  });
  afterAll(() => telemetry.shutdown());
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
    lags = [];
  });

  const range = (from: number, to: number) => orderMessages(topic, from, to);
  /** A consumer of `tp` whose n-th poll (from 1) `poll` answers; the first assigns `tp` before it. */
  const scripted =
    (poll: (n: number) => Promise<ConsumedMessage[]>, seek: Tier1Consumer['seek'] = async () => undefined) =>
    ({ onAssign }: { onAssign: OnAssign }): Tier1Consumer => {
      let polls = 0;
      return {
        connect: async () => undefined,
        poll: async () => {
          polls++;
          if (polls === 1) await onAssign([tp]);
          return poll(polls);
        },
        pause: () => undefined,
        resume: () => undefined,
        paused: () => [],
        assignment: () => [tp],
        lag: () => lags,
        seek,
        commit: async () => undefined,
        close: async () => undefined,
      };
    };

  /**
   * A consumer of `tp` that keeps its pauses as Kafka does (a paused partition is not fetched, a
   * new assignment is not paused): `poll` answers the n-th poll (from 1) and sees the hooks and the
   * paused partitions.
   */
  const pausable =
    (poll: (n: number, hooks: { onAssign: OnAssign; onRevoke: OnRevoke }, paused: Set<number>) => Promise<ConsumedMessage[]>) =>
    (hooks: { onAssign: OnAssign; onRevoke: OnRevoke }): Tier1Consumer => {
      const paused = new Set<number>();
      let polls = 0;
      return {
        connect: async () => undefined,
        poll: () => poll(++polls, hooks, paused),
        pause: (parts) => parts.forEach((p) => paused.add(p.partition)),
        resume: (parts) => parts.forEach((p) => paused.delete(p.partition)),
        paused: () => [...paused].map((partition) => ({ topic, partition })),
        assignment: () => [tp],
        lag: () => [],
        seek: async () => undefined,
        commit: async () => undefined,
        close: async () => undefined,
      };
    };

  // Another worker moved a partition's offsets while this one held a batch of it (a rebalance):
  // the write fails MERGE_OFFSETS_MOVED, the batch is dropped and the partition re-read from the
  // table's offset. Records fetched from the old position in the meantime must not be accepted,
  // or the re-read ones are skipped as re-deliveries and never reach bronze (seen as a CI run
  // whose rebalance test ended 10 events short).
  describe('after MERGE_OFFSETS_MOVED', () => {
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    };

    // The third case holds the resync's rebuild of the dedup window (a bronze read) while the
    // records from the old position arrive: the seek must be in place before that read starts.
    // In the fourth, that read fails: the write after it rebuilds the window before checking.
    it.each([
      ['the seek succeeds at once', 0, 'none'],
      ['the first seek fails (erroneous state)', 1, 'none'],
      ['the dedup window is rebuilt from bronze meanwhile', 0, 'slow'],
      ['the rebuild of the dedup window fails', 0, 'fails'],
    ] as const)('drops records fetched from the old position until the seek to the table offset is done (%s)', async (_label, seekFailures, rebuild) => {
      const slowRebuild = rebuild === 'slow';
      // The partition's offset in the bronze table (undefined: never written).
      const table: { offset?: number } = {};
      const appends: Array<{ offsets: number[]; partitions: PartitionCommit[]; settle: { resolve(v: { version: number }): void; reject(e: unknown): void } }> = [];
      let rebuilds = 0;
      let releaseRebuild: (() => void) | undefined;
      const store: Partial<BronzeStore> = {
        writtenOffsets: async () => new Map(table.offset === undefined ? [] : [[`bronze:${topic}-0`, table.offset]]),
        recentEventIds: async () => {
          // The first read is the assignment's, the second the resync's.
          if (++rebuilds === 2 && slowRebuild) await new Promise<void>((r) => (releaseRebuild = r));
          if (rebuilds === 2 && rebuild === 'fails') throw new Error('storage unavailable');
          return { ids: [], truncated: false };
        },
        committedEventIds: async () => new Set<string>(),
        append: (_contract, records: readonly BronzeRecord[], partitions) =>
          new Promise((resolve, reject) => appends.push({ offsets: records.map((r) => r.offset), partitions: [...partitions], settle: { resolve, reject } })),
      };
      // The consumer: the first poll assigns the partition and returns offsets 0..9; the second is
      // held open by the test; later polls read from the last seek, like Kafka after a seek.
      const seeks: TopicPartitionOffset[] = [];
      let failSeeks = seekFailures;
      let position = 10;
      let held: ((m: ConsumedMessage[]) => void) | undefined;
      const consumer = scripted(
        async (n) => {
          if (n === 1) return range(0, 10);
          if (n === 2) return new Promise<ConsumedMessage[]>((resolve) => (held = resolve));
          await new Promise((r) => setTimeout(r, 5));
          const out = range(position, 15);
          position = 15;
          return out;
        },
        async (s) => {
          if (failSeeks-- > 0) throw new Error('Local: Erroneous state');
          seeks.push(s);
          position = s.offset;
        },
      );
      worker = new Tier1Worker(
        tier1TestOptions({
          topic,
          telemetry,
          store,
          createConsumer: consumer,
          // A watermark makes the worker read bronze for its dedup window (none: nothing to read).
          overrides: { bounds: { maxMs: 200, maxBytes: 1 << 20, maxRecords: 10 }, dedupWatermarkMs: rebuild === 'none' ? 0 : 60_000 },
        }),
      );
      await worker.start();

      // Batch 0..9 is being written while the second poll is out.
      await until('the first append', () => appends.length === 1 && held !== undefined);
      expect(appends[0].offsets).toEqual(range(0, 10).map((m) => m.offset));
      // Meanwhile another worker wrote 0..4 of this partition: the write is refused.
      table.offset = 4;
      appends[0].settle.reject(mergeError('MERGE_OFFSETS_MOVED', 'moved', { details: {} }));
      await settle();
      // The poll that was out returns what the consumer had fetched from the old position.
      held!(range(10, 15));
      if (slowRebuild) {
        await until('the resync to read bronze', () => releaseRebuild !== undefined);
        await settle();
        releaseRebuild!();
      }
      await until('the second append', () => appends.length === 2);
      expect(seeks).toEqual([{ topic, partition: 0, offset: 5 }]);
      // 5..14 are written, after the table's 4; with 10..14 accepted early, 5..9 would be missing.
      expect(appends[1].offsets).toEqual(range(5, 15).map((m) => m.offset));
      expect(appends[1].partitions).toMatchObject([{ appId: `bronze:${topic}-0`, expected: 4, last: 14 }]);
      appends[1].settle.resolve({ version: 2 });
      await until('the write to finish', () => worker!.stats.written === 10);
      // The assignment's read, the resync's, and (after a failed one) the write's.
      if (rebuild !== 'none') expect(rebuilds).toBe(rebuild === 'fails' ? 3 : 2);
    });
  });

  // The resync's read of the table's offsets failed once: the batch had already been dropped and
  // no seek registered, so its records were out of bronze until more records of the partition came
  // (never, on a quiet partition), with its lag reading 0. Now the contract is rewound to what
  // this worker wrote and read again after a back-off: the write fails on the moved offsets once
  // more, the resync succeeds, and 5..9 go in after the table's 4.
  it('after MERGE_OFFSETS_MOVED, a failed read of the table offsets rewinds the contract until a resync succeeds', async () => {
    const table: { offset?: number } = {};
    let offsetReads = 0;
    const appends: Array<{ offsets: number[]; expected?: number }> = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => {
        // Start-up's read, the assignment's, then the resync's, which fails once.
        if (++offsetReads === 3) throw new Error('storage unavailable');
        return new Map(table.offset === undefined ? [] : [[`bronze:${topic}-0`, table.offset]]);
      },
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async (_contract, records: readonly BronzeRecord[], partitions) => {
        appends.push({ offsets: records.map((r) => r.offset), expected: partitions[0].expected });
        if (appends.length === 1) table.offset = 4; // another worker wrote 0..4 meanwhile
        if (partitions[0].expected !== table.offset) throw mergeError('MERGE_OFFSETS_MOVED', 'moved', { details: {} });
        table.offset = partitions[0].last;
        return { version: appends.length };
      },
    };
    // The topic holds 0..9 and nothing more arrives; a seek moves the read position.
    const seeks: TopicPartitionOffset[] = [];
    let position = 10;
    const consumer = scripted(
      async (n) => {
        if (n === 1) return range(0, 10);
        await new Promise((r) => setTimeout(r, 5));
        const out = range(position, 10);
        position = 10;
        return out;
      },
      async (s) => {
        seeks.push(s);
        position = s.offset;
      },
    );
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 20, maxBytes: 1 << 20, maxRecords: 100 }, retryMaxMs: 50 } }));
    await worker.start();
    await until('5..9 written after the table\'s 4', () => table.offset === 9);
    // Rewound to the start (nothing written by this worker), then sought to the table's 5.
    expect(seeks).toEqual([
      { topic, partition: 0, offset: 0 },
      { topic, partition: 0, offset: 5 },
    ]);
    expect(offsetReads).toBe(4);
    expect(appends.at(-1)).toEqual({ offsets: range(5, 10).map((m) => m.offset), expected: 4 });
    expect(worker.stats.written).toBe(5);
  });

  // Records keep arriving while a batch is being written. They used to join the next batch
  // whatever its size, so under a backlog one commit took everything buffered (300k rows against a
  // bound of 100k in the tier-1 bench), and DuckDB staged all of it at once.
  describe('batches stay within their bounds under a backlog', () => {

    it('writes what piled up during a slow append as several bounded batches, in offset order, each chained on the last', async () => {
      const appends: Array<{ offsets: number[]; partitions: PartitionCommit[]; done(): void }> = [];
      const store: Partial<BronzeStore> = {
        writtenOffsets: async () => new Map(),
        recentEventIds: async () => ({ ids: [], truncated: false }),
        committedEventIds: async () => new Set<string>(),
        append: (_contract, records: readonly BronzeRecord[], partitions) =>
          new Promise((resolve) => appends.push({ offsets: records.map((r) => r.offset), partitions: [...partitions], done: () => resolve({ version: appends.length }) })),
      };
      // First poll: 0..9 (one full batch). While that append is held, 35 more arrive.
      let polls = 0;
      const consumer = scripted(async (n) => {
        polls = n;
        if (n === 1) return range(0, 10);
        await new Promise((r) => setTimeout(r, 5));
        return n === 2 ? range(10, 45) : [];
      });
      worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 10 } } }));
      await worker.start();
      await until('the first append', () => appends.length === 1 && polls >= 3);
      for (let i = 0; i < 5; i++) {
        await until(`append ${i + 1}`, () => appends.length === i + 1);
        appends[i].done();
      }
      await until('every record written', () => worker!.stats.written === 45);
      expect(appends.map((a) => a.offsets)).toEqual([0, 10, 20, 30, 40].map((from) => range(from, Math.min(from + 10, 45)).map((m) => m.offset)));
      expect(appends.map((a) => a.partitions.map((p) => [p.expected, p.last]))).toEqual([[[undefined, 9]], [[9, 19]], [[19, 29]], [[29, 39]], [[39, 44]]]);
    });
  });

  // A failed write pauses every partition until a write succeeds. When a rebalance then took the
  // failed batch away, no write was left to succeed: the worker polled paused partitions forever.
  it('resumes consuming after a rebalance took away the batch whose write failed', async () => {
    let appendCalls = 0;
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async () => {
        if (++appendCalls === 1) throw new Error('storage unavailable');
        return { version: appendCalls };
      },
    };
    let rebalanced = false;
    let position = 0;
    const consumer = pausable(async (n, { onAssign, onRevoke }, paused) => {
      if (n === 1) {
        await onAssign([tp]);
        position = 10;
        return range(0, 10);
      }
      await new Promise((r) => setTimeout(r, 5));
      if (!rebalanced && worker!.stats.storageFailures > 0) {
        // The group moves the partition away and back: nothing was committed, so it is read
        // again from the start, and a new assignment is not paused.
        rebalanced = true;
        await onRevoke([tp]);
        paused.clear();
        await onAssign([tp]);
        position = 0;
        return [];
      }
      if (!rebalanced || paused.has(0) || position >= 10) return [];
      position = 10;
      return range(0, 10);
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 10 } } }));
    await worker.start();
    await until('the rebalance after the failed write', () => rebalanced);
    await until('the re-read batch written', () => worker!.stats.written === 10);
    expect(appendCalls).toBe(2);
  });

  it('does not stay on a failure whose batch a rebalance took away (it would turn unready a minute later)', async () => {
    let clock = 1_000_000;
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async () => {
        throw new Error('storage unavailable');
      },
    };
    let revoked = false;
    const consumer = pausable(async (n, { onAssign, onRevoke }) => {
      if (n === 1) {
        await onAssign([tp]);
        return range(0, 10);
      }
      await new Promise((r) => setTimeout(r, 5));
      if (!revoked && worker!.stats.storageFailures > 0) {
        revoked = true;
        await onRevoke([tp]); // and nothing assigned back: this worker has nothing left to write
      }
      return [];
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { now: () => clock, bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 10 } } }));
    await worker.start();
    await until('the partition revoked after the failed write', () => revoked);
    clock += 61_000;
    expect(worker.ready).toBe(true);
  });

  // Backpressure counted the batch and the write in flight, not the DLQ queue: a valid topic full
  // of undecodable records and a slow DLQ producer grew that queue with every poll.
  it('pauses consumption while the DLQ queue holds more than the buffer bound', async () => {
    let sinkCalls = 0;
    let answer: () => void = () => undefined;
    const answered = new Promise<void>((r) => (answer = r));
    const deadLetters = new DeadLetters(async () => {
      sinkCalls += 1;
      await answered; // the DLQ producer does not answer until the test is done
    }, 'test.dlq');
    const bad = (offset: number): ConsumedMessage => ({ ...orderMessage(topic, offset), value: Buffer.alloc(100, 1), size: 100 });
    let position = 0;
    let paused: Set<number> = new Set();
    const consumer = pausable(async (n, { onAssign }, pausedNow) => {
      paused = pausedNow;
      if (n === 1) await onAssign([tp]);
      await new Promise((r) => setTimeout(r, 2));
      if (paused.has(0)) return [];
      position += 20;
      return Array.from({ length: 20 }, (_, i) => bad(position - 20 + i));
    });
    const store: Partial<BronzeStore> = { writtenOffsets: async () => new Map(), recentEventIds: async () => ({ ids: [], truncated: false }) };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { deadLetters, maxBufferedBytes: 5_000 } }));
    try {
      await worker.start();
      await until('the DLQ flush to be out', () => sinkCalls === 1);
      await new Promise((r) => setTimeout(r, 200));
      expect(paused.has(0)).toBe(true);
      // Paused at the bound: without the last poll's 20 records it held less than the bound.
      const perRecord = deadLetters.heldBytes / position;
      expect(deadLetters.heldBytes - 20 * perRecord).toBeLessThan(5_000);
      expect(position).toBeLessThanOrEqual(100);
    } finally {
      answer();
    }
  });

  // An undecodable record goes to the DLQ instead of bronze, and the DLQ must have it before any
  // bronze commit covers its offset. A batch that closed while an earlier DLQ flush was out used
  // to be committed right after that flush, ahead of a record queued for the DLQ in between: a
  // crash there lost the record (in neither bronze nor the DLQ, its offset already committed).
  it('commits no batch before the DLQ has every skipped record below its offsets', async () => {
    const bad = (offset: number): ConsumedMessage => ({ ...orderMessage(topic, offset), value: Buffer.from('not avro') });
    let delivered = 0;
    let flushes = 0;
    let releaseFirstFlush: (() => void) | undefined;
    const deadLetters = new DeadLetters(async (records) => {
      if (++flushes === 1) await new Promise<void>((r) => (releaseFirstFlush = r));
      delivered += records.length;
    }, 'test.dlq');
    const appends: Array<{ offsets: number[]; last: number[]; dlqDelivered: number }> = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async (_contract, records: readonly BronzeRecord[], partitions) => {
        appends.push({ offsets: records.map((r) => r.offset), last: partitions.map((p) => p.last), dlqDelivered: delivered });
        return { version: appends.length };
      },
    };
    let polls = 0;
    const consumer = scripted(async (n) => {
      polls = n;
      if (n === 1) return [bad(0)];
      await new Promise((r) => setTimeout(r, 5));
      // While the flush of offset 0 is out: another bad record, then a full batch after it.
      return n === 2 ? [bad(1), ...range(2, 12)] : [];
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { deadLetters, bounds: { maxMs: 1000, maxBytes: 1 << 20, maxRecords: 10 } } }));
    await worker.start();
    await until('the first DLQ flush to be out and the batch 0..9 closed', () => releaseFirstFlush !== undefined && polls >= 4);
    releaseFirstFlush!();
    await until('the batches written', () => worker!.stats.written === 10);
    // The dead letters keep their places (0 and 1) in the first batch: its commit covers them.
    expect(appends).toEqual([
      { offsets: range(2, 10).map((m) => m.offset), last: [9], dlqDelivered: 2 },
      { offsets: [10, 11], last: [11], dlqDelivered: 2 },
    ]);
    expect(worker.stats.undecodable).toBe(2);
  });

  // A dead letter still queued (its DLQ write failed) when its partition was revoked stayed
  // queued; the partition's next owner, here this worker again, read the record anew and queued
  // it once more, and the DLQ got it twice.
  it('sends a dead letter once when its partition is revoked and assigned back before the DLQ has it', async () => {
    const bad = (offset: number): ConsumedMessage => ({ ...orderMessage(topic, offset), value: Buffer.from('not avro') });
    const sent: number[] = [];
    let sinkCalls = 0;
    const deadLetters = new DeadLetters(async (records) => {
      if (++sinkCalls === 1) throw new Error('DLQ producer: broker unavailable');
      for (const r of records) sent.push(Number(String(r.headers?.['sluice-dlq-source-offset'])));
    }, 'test.dlq');
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async () => ({ version: 1 }),
    };
    let rebalanced = false;
    const consumer = pausable(async (n, { onAssign, onRevoke }) => {
      if (n === 1) {
        await onAssign([tp]);
        return [bad(0), ...range(1, 3)];
      }
      await new Promise((r) => setTimeout(r, 5));
      if (!rebalanced && sinkCalls >= 1) {
        // Away and back: nothing was committed, so the partition is read again from its start.
        rebalanced = true;
        await onRevoke([tp]);
        await onAssign([tp]);
        return [bad(0), ...range(1, 3)];
      }
      return [];
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { deadLetters, bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 100 } } }));
    await worker.start();
    await until('the re-read records written', () => rebalanced && worker!.stats.written === 2);
    expect(sent).toEqual([0]);
    expect(deadLetters.size).toBe(0);
    expect(deadLetters.heldBytes).toBe(0);
  });

  // Nothing recorded a dead letter as handled when it was the last record of its partition: each
  // restart read it, and sent it to the DLQ, again, and the partition's lag never reached 0.
  it('covers the offsets of dead letters with no row after them by a commit of their own', async () => {
    const bad = (offset: number): ConsumedMessage => ({ ...orderMessage(topic, offset), value: Buffer.from('not avro') });
    const deadLetters = new DeadLetters(async () => undefined, 'test.dlq');
    const appends: Array<{ rows: number; last: number[] }> = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async (_contract, records: readonly BronzeRecord[], partitions) => {
        appends.push({ rows: records.length, last: partitions.map((p) => p.last) });
        return { version: appends.length };
      },
    };
    const consumer = scripted(async (n) => {
      if (n === 1) return [...range(0, 3), bad(3), bad(4)];
      await new Promise((r) => setTimeout(r, 5)); // a poll that waits, as the real one does
      return [];
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { deadLetters, bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 100 } } }));
    await worker.start();
    await until('the dead letters covered', () => appends.some((a) => a.last.includes(4)));
    expect(appends).toEqual([{ rows: 3, last: [4] }]);
    expect(worker.stats.undecodable).toBe(2);
  });

  it("tells the group the table's offsets as soon as a partition is assigned (advice for lag tooling)", async () => {
    const commits: TopicPartitionOffset[][] = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map([[`bronze:${topic}-0`, 41]]),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
    };
    const consumer = ({ onAssign }: { onAssign: OnAssign }): Tier1Consumer => {
      let polls = 0;
      return {
        connect: async () => undefined,
        poll: async () => {
          if (++polls === 1) await onAssign([tp]);
          await new Promise((r) => setTimeout(r, 5));
          return [];
        },
        pause: () => undefined,
        resume: () => undefined,
        paused: () => [],
        assignment: () => [tp],
        lag: () => [],
        seek: async () => undefined,
        commit: async (offsets) => void commits.push([...offsets]),
        close: async () => undefined,
      };
    };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer }));
    await worker.start();
    await until('the advice committed', () => commits.length > 0);
    // Resumes after offset 41, the last bronze holds: the next to read is 42, with no traffic at all.
    expect(commits).toEqual([[{ topic, partition: 0, offset: 42 }]]);
  });

  it('counts a dead letter once Kafka has it, not when it is queued', async () => {
    let attempts = 0;
    let fail = true;
    const deadLetters = new DeadLetters(async () => {
      attempts++;
      if (fail) throw new Error('broker unreachable');
    }, 'test.dlq');
    // A bad record and a batch behind it (the DLQ is flushed before each bronze commit).
    const consumer = scripted(async (n) => {
      if (n === 1) return [{ ...orderMessage(topic, 0), value: Buffer.from('not avro') }, ...range(1, 3)];
      await new Promise((r) => setTimeout(r, 5)); // an idle poll waits, as the client's does
      return [];
    });
    const counted = async () => {
      const text = await telemetry.metricsText();
      const sum = (series: string) => [...text.matchAll(new RegExp(`^${series} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
      return {
        dlqRecords: sum('sluice_merge_compaction_dlq_records_total\\{[^}]*contract="orders"[^}]*\\}'),
        eventsOut: sum('sluice_merge_compaction_events_out_total\\{outcome="dlq",contract="orders"\\}'),
      };
    };
    const before = await counted();
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async () => ({ version: 1 }),
    };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { deadLetters, bounds: { maxMs: 20, maxBytes: 1 << 20, maxRecords: 10 } } }));
    await worker.start();
    await until('a failed flush', () => attempts >= 1);
    expect(await counted()).toEqual(before);
    fail = false;
    await until('the flush through', () => deadLetters.size === 0 && deadLetters.heldBytes === 0);
    expect(await counted()).toEqual({ dlqRecords: before.dlqRecords + 1, eventsOut: before.eventsOut + 1 });
  });

  // Tier 1 was ready once its loop ran, whatever its storage said: a rollout with a wrong S3
  // secret or a missing bucket made every new pod ready, and they replaced the working ones; and
  // it joined the group, taking partitions it could not write from the working ones.
  it('joins the group and is ready only once its bronze tables could be read, and not while commits failed for a minute', async () => {
    let refuse = true;
    let clock = 1_000_000;
    const denied = () => Object.assign(new Error('access denied'), { code: 'LAKE_STORAGE_ACCESS_DENIED' });
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => {
        if (refuse) throw denied();
        return new Map();
      },
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async () => {
        if (refuse) throw denied();
        return { version: 1 };
      },
    };
    let deliver = false;
    let polled = 0;
    const consumer = scripted(
      async (n) => {
        polled = n; // the first poll returns once its assignment has read the table's offsets
        await new Promise((r) => setTimeout(r, 5));
        if (!deliver) return [];
        deliver = false;
        return range(0, 3);
      },
      // A failed write seeks back to the table's offset: the records are read again.
      async () => void (deliver = true),
    );
    let connected = false;
    const createConsumer: Tier1ConsumerFactory = (hooks) => ({ ...consumer(hooks), connect: async () => void (connected = true) });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer, overrides: { now: () => clock, bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 3 } } }));
    const starting = worker.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(worker.ready).toBe(false);
    expect(connected).toBe(false);
    refuse = false;
    await starting;
    expect(connected).toBe(true);
    await until('ready once the tables were read', () => worker!.ready);
    await until('the assignment done', () => polled >= 2);

    refuse = true;
    deliver = true;
    await until('a commit failed', () => worker!.stats.storageFailures > 0);
    clock += 59_000;
    expect(worker.ready).toBe(true);
    clock += 2_000;
    expect(worker.ready).toBe(false);
    refuse = false;
    clock += 1_000; // past the retry's back-off
    await until('ready again after a commit', () => worker!.stats.commits > 0 && worker!.ready);
  });

  it('stops while its storage still refuses it without ever joining the group', async () => {
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => {
        throw Object.assign(new Error('no such bucket'), { code: 'LAKE_STORAGE_BUCKET_NOT_FOUND' });
      },
    };
    let created = false;
    const createConsumer: Tier1ConsumerFactory = (hooks) => {
      created = true;
      return scripted(async () => [])(hooks);
    };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer }));
    const starting = worker.start();
    await new Promise((r) => setTimeout(r, 200));
    await worker.stop();
    await starting;
    expect(created).toBe(false);
    expect(worker.ready).toBe(false);
  });

  // Bronze's offsets never go back, so a record at or below them is skipped. After a seek that is
  // never a normal re-delivery (seeks drop the old position's records): the topic was truncated or
  // recreated under bronze. It must be counted and reported, not dropped in silence.
  it('counts records that arrive below what the partition already took (a topic reset under bronze)', async () => {
    const appends: number[][] = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: async (_contract, records: readonly BronzeRecord[]) => {
        appends.push(records.map((r) => r.offset));
        return { version: appends.length };
      },
    };
    let replayed = false;
    const consumer = scripted(async (n) => {
      if (n === 1) return range(0, 5);
      await new Promise((r) => setTimeout(r, 5));
      if (worker?.stats.written !== 5 || replayed) return [];
      replayed = true;
      return range(0, 3); // the topic starts again from offset 0
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer }));
    await worker.start();
    await until('the replayed records counted', () => worker!.stats.belowMark === 3);
    expect(appends).toEqual([range(0, 5).map((m) => m.offset)]);
  });

  // The alert on skipped records is an increase() over the series: a series born at its first
  // skip has no earlier sample, so that skip never raised it.
  it('exports the skipped-records series at zero from the start', async () => {
    const own = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
    try {
      worker = new Tier1Worker(tier1TestOptions({ topic, telemetry: own, store: { writtenOffsets: async () => new Map() }, createConsumer: scripted(async () => []) }));
      await worker.start();
      expect(await own.metricsText()).toMatch(/sluice_merge_compaction_events_in_total\{[^}]*outcome="below_offset"[^}]*\} 0/);
    } finally {
      await worker?.stop();
      worker = undefined;
      await own.shutdown();
    }
  });

  // Bug: the alert on a table that stopped committing joined on the total consumer lag of the
  // process (tables and topics share no label), and nothing told a stuck silver from an idle one.
  it('reports the events waiting for bronze: the lag of its partitions plus the records it holds', async () => {
    let release: (() => void) | undefined;
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: (_contract, records: readonly BronzeRecord[]) => new Promise((resolve) => (release = () => resolve({ version: records.length }))),
    };
    lags = [{ topic, partition: 0, nextOffset: 10, highWatermark: 50, lag: 40 }];
    const consumer = scripted(async (n) => {
      if (n === 1) return range(0, 10);
      await new Promise((r) => setTimeout(r, 5));
      return [];
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 1000, maxBytes: 1 << 20, maxRecords: 10 } } }));
    const waiting = async () => Number(/sluice_merge_compaction_table_waiting_offsets\{[^}]*table="bronze_orders"[^}]*\} (\S+)/.exec(await telemetry.metricsText())?.[1]);
    await worker.start();
    // The batch of ten is being written: held in memory, past the consumer's position.
    await until('the append to start', () => release !== undefined);
    await untilAsync('40 lagging + 10 held', async () => (await waiting()) === 50);
    release!();
    await until('the batch written', () => worker!.stats.written === 10);
    await untilAsync('the lag alone', async () => (await waiting()) === 40);
  });

  /**
   * A worker over orders (`topic`) and clickstream, with a consumer over two partition logs: it
   * delivers from each position unless paused, and a seek moves the position. `failOrders`
   * decides how orders' appends fail (undefined: they succeed).
   */
  async function twoContracts(o: {
    failOrders: () => Error | undefined;
    ordersOffsets?: () => Promise<Map<string, number>>;
    maxBufferedBytes?: number;
    /** Records each poll delivers per partition at most (default all there are). */
    perPoll?: number;
    /** How long an orders append takes before it answers. */
    appendMs?: number;
    deadLetters?: DeadLetters;
    retryBaseMs?: number;
    /** Orders' partition log at the start (default three records). */
    ordersLog?: ConsumedMessage[];
  }) {
    const clickTopic = 'test.clickstream.valid';
    const clickTp = { topic: clickTopic, partition: 0 };
    const appended = new Map<string, number[]>();
    /** `readAtFailures`: orders records read since the last seek, at each failed orders append. */
    /** `appending`, `mostAppendingAtOnce`: appends under way now, and the most there were at once. */
    const state = { failures: 0, largestAppend: 0, ordersCommittedTo: -1, ordersReadSinceSeek: 0, readAtFailures: [] as number[], appending: 0, mostAppendingAtOnce: 0 };
    const store: Partial<BronzeStore> = {
      writtenOffsets: async (contract, appIds) => (contract.name === 'orders' && appIds.length > 0 && o.ordersOffsets ? o.ordersOffsets() : new Map()),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      append: async (contract, records: readonly BronzeRecord[], partitions) => {
        state.mostAppendingAtOnce = Math.max(state.mostAppendingAtOnce, ++state.appending);
        try {
          return await appendOf(contract, records, partitions);
        } finally {
          state.appending -= 1;
        }
      },
    };
    async function appendOf(contract: AnyContract, records: readonly BronzeRecord[], partitions: readonly PartitionCommit[]) {
      if (contract.name === 'orders' && o.appendMs) await new Promise((r) => setTimeout(r, o.appendMs));
      const err = contract.name === 'orders' ? o.failOrders() : undefined;
      if (err) {
        state.failures += 1;
        state.readAtFailures.push(state.ordersReadSinceSeek);
        throw err;
      }
      appended.set(contract.name, [...(appended.get(contract.name) ?? []), ...records.map((r) => r.offset)]);
      state.largestAppend = Math.max(state.largestAppend, records.length);
      if (contract.name === 'orders') state.ordersCommittedTo = partitions[0].last;
      return { version: 1 };
    }
    const logs = new Map<string, ConsumedMessage[]>([
      [topic, o.ordersLog ?? orderMessages(topic, 0, 3)],
      [clickTopic, [0, 1, 2].map((n) => clickMessage(clickTopic, n))],
    ]);
    const position = new Map<string, number>([
      [topic, 0],
      [clickTopic, 0],
    ]);
    const paused = new Set<string>();
    let polls = 0;
    const consumer = ({ onAssign }: { onAssign: OnAssign }): Tier1Consumer => ({
      connect: async () => undefined,
      poll: async () => {
        polls += 1;
        if (polls === 1) await onAssign([tp, clickTp]);
        else await new Promise((r) => setTimeout(r, 5));
        const out: ConsumedMessage[] = [];
        for (const [t, log] of logs) {
          if (paused.has(t)) continue;
          const from = position.get(t) as number;
          const read = log.slice(from, from + (o.perPoll ?? log.length));
          out.push(...read);
          position.set(t, from + read.length);
          if (t === topic) state.ordersReadSinceSeek += read.length;
        }
        return out;
      },
      pause: (parts) => parts.forEach((p) => paused.add(p.topic)),
      resume: (parts) => parts.forEach((p) => paused.delete(p.topic)),
      paused: () => [...paused].map((t) => ({ topic: t, partition: 0 })),
      assignment: () => [tp, clickTp],
      lag: () => [],
      seek: async (to) => {
        position.set(to.topic, to.offset);
        if (to.topic === topic) state.ordersReadSinceSeek = 0;
      },
      commit: async () => undefined,
      close: async () => undefined,
    });
    const overrides = {
      contracts: [CONTRACTS.orders, CONTRACTS.clickstream],
      contractOfTopic: new Map<string, AnyContract>([
        [topic, CONTRACTS.orders],
        [clickTopic, CONTRACTS.clickstream],
      ]),
      decoder: new AvroDecoder([CONTRACTS.orders, CONTRACTS.clickstream]),
      bounds: { maxMs: 20, maxBytes: 1 << 20, maxRecords: 2 },
      retryBaseMs: o.retryBaseMs ?? 20,
      retryMaxMs: 2 * (o.retryBaseMs ?? 20),
      ...(o.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: o.maxBufferedBytes }),
      ...(o.deadLetters === undefined ? {} : { deadLetters: o.deadLetters }),
    };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides }));
    await worker.start();
    return { clickTopic, logs, appended, state, paused };
  }

  // A batch's contracts were written one after another: each contract's records waited for the
  // commits of the contracts before it in the batch.
  it("writes a batch's contracts at once: a slow append of one holds no other back", async () => {
    const t = await twoContracts({ failOrders: () => undefined, appendMs: 300, perPoll: 1 });
    await until('clickstream written', () => (t.appended.get('clickstream') ?? []).length >= 1);
    expect(t.appended.has('orders')).toBe(false); // its first append still runs
    await until('both written', () => (t.appended.get('orders') ?? []).length === 3 && (t.appended.get('clickstream') ?? []).length === 3);
    expect(t.appended.get('orders')).toEqual([0, 1, 2]);
    expect(t.appended.get('clickstream')).toEqual([0, 1, 2]);
    expect(t.state.mostAppendingAtOnce).toBe(2);
  });

  // A closed batch was written contract by contract and retried whole: one contract whose bronze
  // append kept failing held the next batch back, and every other contract of the process stopped.
  it('a contract whose append fails backs off alone, read again from its table offset, while the others go on', async () => {
    let refuse = true;
    const t = await twoContracts({ failOrders: () => (refuse ? new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze refuses writes', { retryable: true }) : undefined) });
    await until('orders failing', () => t.state.failures >= 2);
    // More of both arrive: clickstream's go in later batches while orders backs off (paused,
    // holding nothing) and is read again from its table offset at each retry.
    t.logs.set(topic, orderMessages(topic, 0, 6));
    t.logs.set(t.clickTopic, [0, 1, 2, 3, 4, 5].map((n) => clickMessage(t.clickTopic, n)));
    await until('clickstream written while orders fails', () => (t.appended.get('clickstream') ?? []).length === 6 && t.state.failures >= 4);
    expect(t.appended.get('clickstream')).toEqual([0, 1, 2, 3, 4, 5]);
    expect(t.appended.has('orders')).toBe(false);
    // Orders recovers: every record once, a batch's worth per commit.
    refuse = false;
    await until('orders written after it recovers', () => (t.appended.get('orders') ?? []).length === 6 && t.paused.size === 0);
    expect(t.appended.get('orders')).toEqual([0, 1, 2, 3, 4, 5]);
    expect(t.state.largestAppend).toBe(2);
  });

  // The rewind: records that arrived while the failing write ran are dropped with it (read again
  // after the seek, they would be written twice), the partition stays paused for the back-off,
  // and a retry reads one batch's worth before it is paused again (a backlog read whole at every
  // retry and dropped when it failed again).
  it('a failing contract is paused for its back-off, retried a batch at a time, and written once, in order', async () => {
    let attempts = 0;
    const t = await twoContracts({
      failOrders: () => (++attempts <= 3 ? new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze refuses writes', { retryable: true }) : undefined),
      perPoll: 1,
      appendMs: 40,
      retryBaseMs: 150,
    });
    t.logs.set(topic, orderMessages(topic, 0, 12));
    await until('the first failure', () => t.state.failures === 1);
    await until('orders paused in its back-off', () => t.paused.has(topic));
    expect(t.paused.has(t.clickTopic)).toBe(false);
    // Nothing of it is read again before its back-off (150 ms) ends: it holds nothing meanwhile.
    await new Promise((r) => setTimeout(r, 60));
    expect(t.state.ordersReadSinceSeek).toBe(0);
    await until('orders written after three failures', () => t.state.ordersCommittedTo === 11);
    expect(t.appended.get('orders')).toEqual(Array.from({ length: 12 }, (_, i) => i));
    // Read on while the first write ran; a retry reads a batch (2) and one poll that raced the pause.
    const [first, ...retries] = t.state.readAtFailures;
    expect(first).toBeGreaterThan(3);
    expect(retries).toHaveLength(2);
    for (const read of retries) expect(read).toBeLessThanOrEqual(3);
  });

  // What a failing write's contract had in the batcher goes with its rewind: kept, it was closed
  // into the next batch ahead of the same records read again after the seek.
  it('records that arrived while a write failed are read again once, not kept beside their re-read', async () => {
    let attempts = 0;
    const t = await twoContracts({
      failOrders: () => (++attempts === 1 ? new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze refuses a write', { retryable: true }) : undefined),
      perPoll: 1,
      appendMs: 40,
    });
    t.logs.set(topic, orderMessages(topic, 0, 12));
    await until('orders written after one failure', () => t.state.ordersCommittedTo === 11);
    expect(t.state.readAtFailures[0]).toBeGreaterThan(3); // the batcher held later records when it failed
    expect(t.appended.get('orders')).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  // A dead letter read again after a rewind keeps its place in the batch but is sent once; a
  // record read again is not counted as consumed again either.
  it('a dead letter of a failing contract goes to the DLQ once, and the commit after it covers its offset', async () => {
    let dlqRecords = 0;
    const deadLetters = new DeadLetters(async (records) => void (dlqRecords += records.length), 'test.dlq');
    let attempts = 0;
    const consumed = async () => sampleValue(await telemetry.metricsText(), 'sluice_merge_compaction_events_in_total', { outcome: 'consumed' }) ?? 0;
    const consumedBefore = await consumed();
    const t = await twoContracts({
      failOrders: () => (++attempts <= 2 ? new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze refuses writes', { retryable: true }) : undefined),
      deadLetters,
      ordersLog: [orderMessage(topic, 0), { ...orderMessage(topic, 1), value: Buffer.from('not avro') }, orderMessage(topic, 2)],
    });
    await until('orders written after two failures', () => t.state.ordersCommittedTo === 2);
    expect(t.appended.get('orders')).toEqual([0, 2]);
    expect(dlqRecords).toBe(1);
    expect(worker!.stats.undecodable).toBe(1);
    await until('clickstream written', () => (t.appended.get('clickstream') ?? []).length === 3);
    // Orders' three records, each read three times, and clickstream's three.
    expect((await consumed()) - consumedBefore).toBe(6);
  });

  // Keeping a failing contract's records for its retry: once they held half the buffer bound,
  // the memory pause never lifted and every contract stopped.
  it('a contract failing for good holds no buffer: the others flow under a bound its records would fill', async () => {
    const t = await twoContracts({ failOrders: () => new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze refuses writes', { retryable: true }), maxBufferedBytes: 2_000 });
    t.logs.set(topic, orderMessages(topic, 0, 8)); // ~500 bytes each once decoded: twice the bound
    await until('orders failing', () => t.state.failures >= 2);
    for (let n = 3; n < 40; n += 3) {
      t.logs.set(t.clickTopic, Array.from({ length: n }, (_, i) => clickMessage(t.clickTopic, i)));
      await new Promise((r) => setTimeout(r, 20));
    }
    await until('clickstream written while orders fails for good', () => (t.appended.get('clickstream') ?? []).length === 39);
    expect(t.appended.get('clickstream')).toEqual(Array.from({ length: 39 }, (_, i) => i));
  });

  // A failed offsets read after MERGE_OFFSETS_MOVED escaped the per-contract loop: the contracts
  // after it were not written, and it was retried at the base delay, every partition paused.
  it('a contract whose offsets moved and cannot be read again backs off alone', async () => {
    let reads = 0;
    const t = await twoContracts({
      failOrders: () => mergeError('MERGE_OFFSETS_MOVED', 'moved', { details: {} }),
      // The assignment reads them; every read after that fails.
      ordersOffsets: async () => {
        if (++reads > 1) throw new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'orders bronze unreadable', { retryable: true });
        return new Map();
      },
    });
    t.logs.set(t.clickTopic, [0, 1, 2, 3, 4, 5].map((n) => clickMessage(t.clickTopic, n)));
    await until('clickstream written while orders cannot resync', () => (t.appended.get('clickstream') ?? []).length === 6 && t.state.failures >= 3);
    expect(t.appended.get('clickstream')).toEqual([0, 1, 2, 3, 4, 5]);
    expect(worker!.stats.storageFailures).toBeGreaterThanOrEqual(2);
    expect(reads).toBeGreaterThanOrEqual(3);
  });
});
