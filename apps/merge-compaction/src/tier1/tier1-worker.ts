import type { AnyContract, AvroDecoder } from '@sluice/contracts';
import { isSluiceError } from '@sluice/errors';
import type { BatchConsumer, ConsumedMessage, OnAssign, OnRevoke, PartitionRef, TopicPartitionOffset } from '@sluice/kafka';
import { StallWatch, type Logger, type SluiceMetrics } from '@sluice/telemetry';
import { Backoff, sleep } from '../flow/backoff';
import { BackpressureController } from '../flow/backpressure';
import type { AssignmentVerdict, AssignmentWatch } from './assignment-watch';
import { decodeRecord, isRow, type BatchRecord, type BronzeRecord } from './bronze-record';
import type { BronzeStore, PartitionCommit } from './bronze-store';
import type { DeadLetters } from './dead-letters';
import { DedupWindow } from './dedup-window';
import { batchPrefix, inTurns, MicroBatcher, type BatchBounds } from './micro-batcher';
import { lastOffsets, OffsetBook, tpKey, type TopicPartition } from './offset-book';
import { traceBronzeAppend, type Tier1Tracer } from './trace';

/** The consumer operations tier 1 uses (a libs/kafka BatchConsumer). */
export type Tier1Consumer = Pick<BatchConsumer, 'connect' | 'poll' | 'pause' | 'resume' | 'paused' | 'assignment' | 'lag' | 'seek' | 'commit' | 'close'>;

/** How often the events waiting for each bronze table are reported. */
const WAITING_REPORT_MS = 1000;
/** What a dead letter's place in a batch holds (the record itself is counted in the DLQ queue). */
const SKIPPED_BYTES = 64;

/** Creates the consumer with tier 1's rebalance hooks (so the table, not the group, decides offsets). */
export type Tier1ConsumerFactory = (hooks: { onAssign: OnAssign; onRevoke: OnRevoke }) => Tier1Consumer;

/** Storage failing this long without a success makes tier 1 unready (as tier 2's steps). */
const STORAGE_UNREADY_AFTER_MS = 60_000;
/** {@link Tier1Options.stallTimeoutMs} when not given. */
const DEFAULT_STALL_TIMEOUT_MS = 240_000;

/** Options of {@link Tier1Worker}. */
export interface Tier1Options {
  readonly contracts: readonly AnyContract[];
  /** Valid topic name → contract (topic names may carry a test/tenant prefix). */
  readonly contractOfTopic: ReadonlyMap<string, AnyContract>;
  readonly decoder: AvroDecoder;
  readonly store: BronzeStore;
  /** Where records that cannot go into bronze go; flushed before every bronze commit. */
  readonly deadLetters: DeadLetters;
  readonly createConsumer: Tier1ConsumerFactory;
  readonly bounds: BatchBounds;
  readonly maxBufferedBytes: number;
  readonly dedupWatermarkMs: number;
  /** Most event ids the dedup windows of this process hold together (shared by the partitions it owns). */
  readonly dedupMaxIds: number;
  readonly retryBaseMs?: number;
  readonly retryMaxMs: number;
  /**
   * Longest one poll may take before the worker counts as hung and `live` turns false; inside
   * rebalance hooks the clock restarts at each storage read (and each retry), so a slow or
   * failing store is never taken for a hang, a read that never answers is. Default 240 000
   * (keep it below the consumer's max.poll.interval.ms). The same limit holds for each step of
   * a bronze write (the DLQ flush, the dedup lookups, the append): a write that never returns
   * left the loop polling, paused by backpressure, live and consuming nothing. The append is one
   * step with its commit attempts, the checkpoint every 10 commits and the log cleanup every 100
   * (bounded: libs/lake's CLEANUP_MAX_KEYS), each far below the limit on a working store.
   */
  readonly stallTimeoutMs?: number;
  /**
   * Checks every `windowMs` whether the group has left partitions of the valid topics without
   * an owner while this worker held nothing (a wedged join); if so `live` turns false. None
   * without it.
   */
  readonly groupWatch?: { readonly watch: AssignmentWatch; readonly windowMs: number };
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
  /** Full name of a contract table (its metric label), as the store names it. */
  readonly tableName: (table: string) => string;
  /** Records `merge.bronze-append` spans for sampled records; none without it. */
  readonly tracer?: Tier1Tracer;
  /** Called after each bronze commit (tier 2 in the same process starts its fold at once). */
  readonly onCommitted?: () => void;
  readonly now?: () => number;
}

/** Per-partition state tier 1 owns while a partition is assigned. */
interface Owned {
  readonly tp: TopicPartition;
  readonly contract: AnyContract;
  /** Undefined after a resync whose bronze read failed: rebuilt by the next write, before it checks anything. */
  dedup: DedupWindow | undefined;
  /**
   * The highest offset taken from the partition since it was assigned here: a record read again
   * (a rewind, a resync) keeps its place in the batch but is neither counted as consumed nor
   * dead-lettered twice.
   */
  takenUpTo: number;
}

/**
 * Tier 1: consumes the valid topics (read_committed), micro-batches, deduplicates by event_id
 * and offset, and appends each batch to bronze with its offsets as `txn` actions in the same
 * commit. See docs/design/merge-compaction.md, invariants 1–4, 8, 9.
 */
export class Tier1Worker {
  private readonly book = new OffsetBook('bronze:');
  private readonly owned = new Map<string, Owned>();
  private readonly batcher: MicroBatcher<BatchRecord>;
  private readonly flow: BackpressureController;
  private readonly backoff: Backoff;
  private readonly now: () => number;
  /** Closed batches waiting to be written, per contract, oldest records first. */
  private pending: Map<string, BatchRecord[]> | undefined;
  private pendingBytes = 0;
  /** When the next write may start after a failed DLQ flush or an unexpected error. */
  private retryAt = 0;
  /**
   * Contracts whose last write failed, by name: their back-off. Meanwhile their records are
   * dropped and their partitions paused, sought back to what bronze holds (see `backOff`).
   */
  private readonly failing = new Map<string, { readonly backoff: Backoff; retryAt: number }>();
  /** The write of `pending` while it runs: polling continues meanwhile (the next batch fills). */
  private inflight: Promise<void> | undefined;
  /**
   * Seeks decided by a write (offsets moved), by partition, applied by the loop between polls.
   * Until its seek has succeeded, a partition's fetched records are dropped: they come from the
   * old position, and accepting one would raise the in-session mark above the records the seek
   * is meant to read again, which would then be skipped as re-deliveries (lost).
   */
  private readonly seeks = new Map<string, TopicPartitionOffset>();
  private consumer: Tier1Consumer | undefined;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private readonly abort = new AbortController();
  private failed: unknown;
  /** The poll in progress, with its rebalance hooks. */
  private readonly pollWatch: StallWatch;
  /** The bronze write in flight, beside the polls (one at a time). */
  private readonly writeWatch: StallWatch;
  private unassignedSince: number | undefined;
  private unassignedReportedAt = 0;
  private groupWatchTimer: NodeJS.Timeout | undefined;
  /** Counters tests and /readyz read. */
  readonly stats = { written: 0, duplicates: 0, undecodable: 0, belowMark: 0, commits: 0, storageFailures: 0, maxBufferedBytes: 0, dedupBronzeChecks: 0, dedupBronzeDuplicates: 0 };
  private waitingReportedAt = -Infinity;
  /** When a partition's records below its mark were last reported, by partition key. */
  private readonly belowMarkReportedAt = new Map<string, number>();
  /** Whether the start-up read of every bronze table succeeded (readiness). */
  private storageReached = false;
  /** Since when storage reads and commits fail without a success between (readiness); undefined while they succeed. */
  private storageFailingSince: number | undefined;

  constructor(private readonly options: Tier1Options) {
    this.now = options.now ?? Date.now;
    this.batcher = new MicroBatcher(options.bounds, this.now);
    this.flow = new BackpressureController({ maxBufferedBytes: options.maxBufferedBytes });
    this.backoff = new Backoff(options.retryBaseMs ?? 100, options.retryMaxMs);
    this.pollWatch = new StallWatch(options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS, options.now);
    this.writeWatch = new StallWatch(options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS, options.now);
  }

  /**
   * True once connected and looping, its bronze tables read once (a pod whose storage refuses it,
   * wrong credentials or a missing bucket, does not become ready and replace a working one), and
   * while storage has not been failing for a minute; not while stopping.
   */
  get ready(): boolean {
    const storageOk = this.storageReached && (this.storageFailingSince === undefined || this.now() - this.storageFailingSince < STORAGE_UNREADY_AFTER_MS);
    return this.loop !== undefined && !this.stopping && this.failed === undefined && storageOk;
  }

  /**
   * False after the loop died on an unexpected error, while a poll or a step of a bronze write
   * has hung, or once the group watch found partitions nobody holds (liveness).
   */
  get live(): boolean {
    return this.failed === undefined && this.pollWatch.live() && this.writeWatch.live() && (this.options.groupWatch?.watch.live() ?? true);
  }

  /** The group watch's last verdict (for the exit report), or undefined without one. */
  assignment(): AssignmentVerdict | undefined {
    return this.options.groupWatch?.watch.current();
  }

  /** The poll or write step running longest and for how long (for the stall report), or undefined. */
  running(): { step: string; forMs: number } | undefined {
    const poll = this.pollWatch.running();
    const write = this.writeWatch.running();
    return write !== undefined && (poll === undefined || write.forMs > poll.forMs) ? write : poll;
  }

  /**
   * Reads its bronze tables (retrying until storage answers: a pod whose storage refuses it does
   * not join the group and take partitions from working ones), then connects and starts the loop
   * in the background.
   */
  async start(): Promise<void> {
    await this.reachStorage();
    if (this.stopping) return;
    // The series exists before the first skip, so the alert's increase() sees that skip.
    this.options.metrics.eventsIn.add(0, { outcome: 'below_offset' });
    this.consumer = this.options.createConsumer({
      onAssign: (parts) => this.onAssign(parts),
      onRevoke: (parts) => this.onRevoke(parts),
    });
    await this.consumer.connect();
    this.checkGroupEvery();
    this.loop = this.run().catch((err) => {
      this.failed = err;
      this.options.logger.fatal({ err }, 'tier1 loop stopped on an unexpected error');
    });
  }

  /** Reads every bronze table once (absent ones count), retrying with back-off, then marks storage reached. */
  private async reachStorage(): Promise<void> {
    const backoff = new Backoff(100, this.options.retryMaxMs);
    while (!this.stopping) {
      try {
        await Promise.all(this.options.contracts.map((c) => this.options.store.writtenOffsets(c, [])));
        this.storageReached = true;
        return;
      } catch (err) {
        const delay = backoff.next();
        this.options.logger.warn({ err, retryInMs: delay }, 'reading the bronze tables at start failed (not ready until it succeeds), retrying');
        await sleep(delay, this.abort.signal).catch(() => undefined);
      }
    }
  }

  /**
   * Stops: no new polls, waits for an in-flight commit (it is atomic either way), drops the open
   * batch (re-read by the next owner from the table offsets), closes the consumer.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    clearTimeout(this.groupWatchTimer);
    await this.loop;
    await this.inflight;
    this.batcher.clear();
    this.pending = undefined;
    await this.consumer?.close().catch((err) => this.options.logger.warn({ err }, 'consumer close failed'));
  }

  private async run(): Promise<void> {
    const consumer = this.consumer as Tier1Consumer;
    while (!this.stopping) {
      let messages;
      this.pollWatch.begin('seek');
      try {
        await this.applySeeks(consumer);
        this.pollWatch.label('poll');
        messages = await consumer.poll();
      } catch (err) {
        this.pollWatch.end();
        // A failed assignment hook or a transient client error: keep the process, back off.
        this.options.logger.error({ err }, 'tier1 poll failed');
        await sleep(this.backoff.next(), this.abort.signal);
        continue;
      }
      this.pollWatch.end();
      this.reportUnassigned(consumer);
      let consumed = 0;
      for (const m of messages) if (this.take(m) === 'first') consumed += 1;
      // One metric update per poll: a per-record add hashes its attributes every time.
      if (consumed > 0) this.options.metrics.eventsIn.add(consumed, { outcome: 'consumed' });
      if (this.stopping) break;
      if (this.inflight === undefined && this.batcher.due() !== undefined) this.closeBatch();
      // One write at a time, overlapped with polling; errors are handled inside writePending.
      const work = this.pendingDue() || this.options.deadLetters.size > 0;
      if (work && this.inflight === undefined && this.now() >= this.retryAt) {
        this.writeWatch.begin('write: DLQ flush');
        this.inflight = this.writePending()
          .catch((err) => {
            // Only an unexpected error (e.g. re-reading offsets failed) gets here: retry later.
            this.retryAt = this.now() + this.backoff.next();
            this.flow.storageFailed();
            this.options.logger.error({ err }, 'bronze write step failed; retrying');
          })
          .finally(() => {
            this.writeWatch.end();
            this.inflight = undefined;
          });
      }
      this.updateFlow(consumer);
      this.reportWaiting(consumer);
    }
  }

  /**
   * The events waiting for each bronze table, at most once a second: the lag of the partitions
   * this worker holds plus the records it holds in memory (the batch filling and the batch being
   * written). With the table's commit age it tells a stuck table from an idle one (alert
   * SluiceTableNotCommitting); a table none of whose partitions this worker holds reports 0.
   */
  private reportWaiting(consumer: Tier1Consumer): void {
    const now = this.now();
    if (now - this.waitingReportedAt < WAITING_REPORT_MS) return;
    this.waitingReportedAt = now;
    const waiting = new Map(this.options.contracts.map((c) => [c, 0]));
    const add = (contract: AnyContract | undefined, n: number) => {
      if (contract !== undefined) waiting.set(contract, (waiting.get(contract) ?? 0) + n);
    };
    try {
      for (const l of consumer.lag()) add(this.options.contractOfTopic.get(l.topic), l.lag);
    } catch {
      // positions unavailable (closing): only the records held count this time
    }
    this.batcher.forEach((r) => add(r.contract, 1));
    for (const records of this.pending?.values() ?? []) for (const r of records) add(r.contract, 1);
    for (const [contract, n] of waiting) this.options.metrics.tableWaiting.set(n, { table: this.options.tableName(contract.tables.bronze) });
  }

  /** Runs the group watch every window until stopped or stuck. */
  private checkGroupEvery(): void {
    const groupWatch = this.options.groupWatch;
    if (groupWatch === undefined || this.stopping) return;
    this.groupWatchTimer = setTimeout(() => {
      void groupWatch.watch.check().then((verdict) => {
        if (verdict.stuck) this.options.logger.error({ assignment: verdict }, 'partitions of the valid topics had no owner in the group for a whole window while this worker held none');
        else this.checkGroupEvery();
      });
    }, groupWatch.windowMs);
    this.groupWatchTimer.unref();
  }

  /**
   * Says once a minute while this worker polls without partitions: normal for a member beyond
   * the partition count, a wedged group join otherwise (the group's view tells which).
   */
  private reportUnassigned(consumer: Tier1Consumer): void {
    if (consumer.assignment().length > 0) {
      this.unassignedSince = undefined;
      return;
    }
    const now = this.now();
    this.unassignedSince ??= now;
    if (now - this.unassignedSince >= 60_000 && now - this.unassignedReportedAt >= 60_000) {
      this.unassignedReportedAt = now;
      this.options.logger.info({ forMs: now - this.unassignedSince }, 'polling without partitions assigned');
    }
  }

  /** Applies the pending seeks; one that fails stays pending (and its partition's records dropped) until it succeeds. */
  private async applySeeks(consumer: Tier1Consumer): Promise<void> {
    for (const [key, seek] of this.seeks) {
      if (!this.book.owns(seek)) {
        this.seeks.delete(key);
        continue;
      }
      try {
        await consumer.seek(seek);
        // Only the seek applied: one registered meanwhile (a rewind, a resync) stays for the next turn.
        if (this.seeks.get(key) === seek) this.seeks.delete(key);
      } catch (err) {
        // E.g. "erroneous state" right after an assignment: the next loop turn tries again.
        this.options.logger.warn({ err, ...seek }, 'seek failed; retrying before the partition is read again');
      }
    }
  }

  /**
   * Takes one polled record into the batch (or the DLQ): 'first' the first time this session,
   * 'again' when a rewind reads it again, false when it is not this worker's to take.
   */
  private take(m: ConsumedMessage): 'first' | 'again' | false {
    const tp = { topic: m.topic, partition: m.partition };
    const key = tpKey(tp);
    const owned = this.owned.get(key);
    if (!owned || this.seeks.has(key)) return false;
    if (!this.book.accept(tp, m.offset)) {
      this.reportBelowMark(m, key);
      return false;
    }
    const taken = m.offset > owned.takenUpTo ? 'first' : 'again';
    if (taken === 'first') owned.takenUpTo = m.offset;
    const decoded = decodeRecord(m, owned.contract, this.options.decoder);
    if (!decoded.ok) {
      // Not bronze material (validate wrote it, so a bug or a foreign writer upstream): to the DLQ.
      if (taken === 'first') {
        this.stats.undecodable += 1;
        this.options.deadLetters.add(m, owned.contract.name, decoded.issues);
        this.options.logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, issues: decoded.issues }, 'undecodable record on a valid topic, sent to the DLQ');
      }
      // Its place in the batch: the commit after the DLQ flush covers its offset.
      this.batcher.add({ topic: m.topic, partition: m.partition, offset: m.offset, contract: owned.contract, bytes: SKIPPED_BYTES, skipped: true }, SKIPPED_BYTES);
      return taken;
    }
    this.batcher.add(decoded.value, decoded.value.bytes);
    return taken;
  }

  /**
   * A record at or below what this worker already took from its partition, with no seek pending.
   * Seeks drop the records of the old position, so this is not a normal re-delivery: the topic
   * was truncated or recreated and the consumer was reset to an offset bronze has already passed.
   * Those records are skipped (bronze's offsets cannot go back), which must not happen silently.
   */
  private reportBelowMark(m: ConsumedMessage, key: string): void {
    this.stats.belowMark += 1;
    this.options.metrics.eventsIn.add(1, { outcome: 'below_offset' });
    const now = this.now();
    if (now - (this.belowMarkReportedAt.get(key) ?? -Infinity) < 60_000) return;
    this.belowMarkReportedAt.set(key, now);
    this.options.logger.error(
      { topic: m.topic, partition: m.partition, offset: m.offset, written: this.book.writtenOffset(m) },
      "record at or below the partition's offset in bronze, skipped: if the topic was truncated or recreated, its new records at these offsets are not in bronze (reported once a minute per partition)",
    );
  }

  /**
   * Whether some contract's records wait for a write outside a back-off (a failing contract's
   * partitions are paused then, so its records only come from a fetch that raced the pause:
   * they wait for its back-off to end).
   */
  private pendingDue(): boolean {
    const now = this.now();
    for (const name of this.pending?.keys() ?? []) if (!this.backingOff(name, now)) return true;
    return false;
  }

  /** Whether contract `name` failed and its back-off has not ended at `now`. */
  private backingOff(name: string, now: number): boolean {
    return (this.failing.get(name)?.retryAt ?? -Infinity) > now;
  }

  /** Adds the batch's records to what waits per contract, after any left by the last write. */
  private closeBatch(): void {
    const batch = this.batcher.take();
    if (!batch) return;
    const byContract = (this.pending ??= new Map<string, BatchRecord[]>());
    for (const r of batch.records) {
      const list = byContract.get(r.contract.name);
      if (list) list.push(r);
      else byContract.set(r.contract.name, [r]);
    }
    this.pendingBytes += batch.bytes;
  }

  private async writePending(): Promise<void> {
    const started = performance.now();
    // Before any commit that may cover their offsets, the DLQ must have the records it skips.
    // Batches close only while no write is in flight, so every dead letter whose place this
    // write may commit was queued before the flush began.
    const pending = this.pending;
    try {
      // Counted once Kafka has them: a record queued and then lost to a failed flush or a
      // rebalance was counted, and counted again when read anew.
      for (const w of await this.options.deadLetters.flush()) {
        this.options.metrics.eventsOut.add(1, { outcome: 'dlq', contract: w.contract });
        this.options.metrics.dlqRecords.add(1, { reason: w.reason, contract: w.contract });
      }
    } catch (err) {
      this.retryAt = this.now() + this.backoff.next();
      this.flow.storageFailed();
      this.options.logger.warn({ err, queued: this.options.deadLetters.size }, 'DLQ write failed, will retry before the next bronze commit');
      return;
    }
    this.flow.storageRecovered();
    if (pending === undefined) {
      this.backoff.reset();
      return;
    }
    // Contracts at once, in turns that together stage no more than one batch's bounds (what a
    // commit staged in DuckDB before): each commits to its own table and partitions, and a small
    // commit waits on storage (fsyncs, PUTs) more than it computes, so at a steady rate a
    // contract's records no longer wait for the others' commits, while a backlog of every
    // contract is still staged a batch at a time. One whose append fails is rewound and backs off
    // alone, and the others are written (a failing table stopped every contract the process served).
    let failures = 0;
    let unexpected: { err: unknown } | undefined;
    for (const turn of inTurns([...pending], ([, records]) => records.length, ([, records], i) => records[i].bytes, this.options.bounds)) {
      const outcomes = await Promise.allSettled(turn.map(([name, records]) => this.writePendingOf(pending, name, records)));
      for (const o of outcomes) {
        if (o.status === 'rejected') unexpected ??= { err: o.reason };
        if (o.status === 'rejected' || !o.value) failures += 1;
      }
      // A write that threw (a bug: writePendingOf handles its errors) ends the step once every
      // write of its turn has settled, so none runs on after it: the step is retried as a whole.
      if (unexpected) throw unexpected.err;
    }
    if (pending.size === 0) this.pending = undefined;
    this.pendingBytes = bytesOf(pending);
    if (failures === 0) this.backoff.reset();
    this.options.metrics.batchDuration.record((performance.now() - started) / 1000, { outcome: failures > 0 ? 'error' : 'ok' });
  }

  /**
   * Writes what waits for contract `name` (a batch's worth), unless it backs off. False when the
   * write failed and the contract now backs off.
   */
  private async writePendingOf(pending: Map<string, BatchRecord[]>, name: string, records: BatchRecord[]): Promise<boolean> {
    if (this.backingOff(name, this.now())) return true;
    const owned = records.filter((r) => this.book.owns(r));
    if (owned.length === 0) {
      pending.delete(name);
      return true;
    }
    // A batch's worth at a time (several batches may wait), so one commit never stages more
    // than the bounds in DuckDB; the rest goes in the next write.
    const { n } = batchPrefix(owned.length, (i) => owned[i].bytes, this.options.bounds);
    try {
      await this.writeContract(owned[0].contract, n === owned.length ? owned : owned.slice(0, n));
      this.failing.delete(name);
      if (n === owned.length) pending.delete(name);
      else pending.set(name, owned.slice(n));
      return true;
    } catch (err) {
      if (!isSluiceError(err, 'MERGE_OFFSETS_MOVED')) {
        this.backOff(pending, name, err, 'bronze append failed');
        return false;
      }
    }
    this.writeWatch.progress(`write: ${name}: re-read the offsets another worker moved`);
    try {
      // Dropped only once the seek to the table's offset is registered: a failed offsets read
      // dropped it with no seek behind, so its records waited for the next traffic of their
      // partition (or a restart) to be read again, with the partition's lag reading 0.
      await this.resync(owned);
      pending.delete(name);
      return true;
    } catch (err) {
      // Rewound to what this worker last wrote: read again after the back-off, the write
      // fails on the moved offsets once more and resyncs.
      this.backOff(pending, name, err, 'reading the offsets another worker moved failed');
      return false;
    }
  }

  /**
   * A contract's write failed: its own back-off grows, and it is rewound so that it holds no
   * memory meanwhile (the others keep the whole buffer bound): its records, waiting and in the
   * batcher, are dropped and its partitions sought back to what this worker last wrote to bronze,
   * paused until the back-off ends, then read and written again.
   */
  private backOff(pending: Map<string, BatchRecord[]>, name: string, err: unknown, what: string): void {
    this.stats.storageFailures += 1;
    this.storageFailingSince ??= this.now();
    const backoff = this.failing.get(name)?.backoff ?? new Backoff(this.options.retryBaseMs ?? 100, this.options.retryMaxMs);
    const delay = backoff.next();
    this.failing.set(name, { backoff, retryAt: this.now() + delay });
    pending.delete(name);
    this.batcher.retain((r) => r.contract.name !== name);
    for (const [key, o] of this.owned) {
      if (o.contract.name !== name) continue;
      this.seeks.set(key, { ...o.tp, offset: this.book.assign(o.tp, this.book.writtenOffset(o.tp)) });
    }
    this.options.logger.warn({ err, contract: name, retryInMs: delay, failures: backoff.failures }, `${what}; the contract's partitions are read again after the back-off, the other contracts go on`);
  }

  private async writeContract(contract: AnyContract, records: BatchRecord[]): Promise<void> {
    // The rows of each partition (a partition with only dead letters' places has none: its
    // offsets move with the commit all the same).
    const byTp = new Map<string, BronzeRecord[]>();
    for (const r of records) {
      if (!isRow(r)) continue;
      const key = tpKey(r);
      const list = byTp.get(key);
      if (list) list.push(r);
      else byTp.set(key, [r]);
    }
    const keep: BronzeRecord[] = [];
    let duplicates = 0;
    for (const [key, list] of byTp) {
      const owned = this.owned.get(key) as Owned;
      this.writeWatch.progress(`write: ${contract.name}: dedup`);
      // A failed rebuild fails this write like any storage error: the batch is retried after a back-off.
      owned.dedup ??= await this.rebuildDedup(contract, list[0].partition, this.dedupShare(this.owned.size));
      const verdict = owned.dedup.check(list);
      // Inside the watermark but older than memory holds: bronze has the answer.
      const committed = verdict.unsure.length > 0 ? await this.options.store.committedEventIds(contract, verdict.unsure) : new Set<string>();
      const inBronze = new Set(verdict.unsure.filter((r) => committed.has(r.eventId)));
      for (const r of verdict.keep) if (!inBronze.has(r)) keep.push(r);
      duplicates += verdict.duplicates.length + inBronze.size;
      this.stats.dedupBronzeChecks += verdict.unsure.length;
      this.stats.dedupBronzeDuplicates += inBronze.size;
      if (inBronze.size > 0) this.options.metrics.dedupLookups.add(inBronze.size, { outcome: 'duplicate' });
      if (verdict.unsure.length > inBronze.size) this.options.metrics.dedupLookups.add(verdict.unsure.length - inBronze.size, { outcome: 'new' });
    }
    const last = lastOffsets(records);
    const partitions: PartitionCommit[] = [...last.values()].map(({ tp, offset }) => ({
      tp,
      appId: this.book.appId(tp),
      expected: this.book.writtenOffset(tp),
      last: offset,
    }));
    const appendStarted = performance.now();
    this.writeWatch.progress(`write: ${contract.name}: bronze append`);
    const { version } = await this.options.store.append(contract, keep, partitions);
    const appendMs = Math.round(performance.now() - appendStarted);
    // Commit duration and count come from libs/lake's commit event (docs/design/telemetry.md).
    this.book.markWritten(last);
    const kept = new Set(keep);
    for (const [key, list] of byTp) {
      const owned = this.owned.get(key) as Owned;
      owned.dedup?.remember(list.filter((r) => kept.has(r)));
    }
    this.stats.written += keep.length;
    this.stats.duplicates += duplicates;
    this.stats.commits += 1;
    this.storageFailingSince = undefined;
    this.options.metrics.eventsOut.add(keep.length, { outcome: 'ok', contract: contract.name });
    if (duplicates > 0) this.options.metrics.eventsOut.add(duplicates, { outcome: 'duplicate', contract: contract.name });
    // Only after the commit succeeded: a span says "this event is durable in bronze at version v".
    if (this.options.tracer) traceBronzeAppend(this.options.tracer, records.filter(isRow), kept, { table: contract.tables.bronze, version, durationMs: appendMs });
    this.options.logger.debug(
      { table: contract.tables.bronze, version, rows: keep.length, duplicates, appendMs, offsets: partitions.map((p) => `${p.appId}@${p.last}`) },
      'bronze commit',
    );
    this.adviseGroup([...last.values()].map(({ tp, offset }) => ({ topic: tp.topic, partition: tp.partition, offset: offset + 1 })));
    this.options.onCommitted?.();
  }

  /**
   * Tells the consumer group how far bronze is, after the table commit: the table decides where a
   * partition resumes, but the group's committed offsets are what lag tooling and autoscalers
   * (KEDA's Kafka scaler) read; without them every partition looked behind by all it ever held.
   * Not awaited and never retried: a lost or refused commit (a rebalance took the partition) only
   * leaves the advice older until the next batch.
   */
  private adviseGroup(offsets: readonly TopicPartitionOffset[]): void {
    const consumer = this.consumer;
    if (consumer === undefined || offsets.length === 0) return;
    consumer.commit(offsets).catch((err: unknown) => this.options.logger.debug({ err }, 'advisory group offset commit failed; the table keeps the offsets'));
  }

  /**
   * Another worker moved the offsets: re-read them from the table and seek there. The mark moves
   * back and the seek is registered together, before any other await: the loop keeps polling
   * meanwhile, and a record it accepted from the old position would raise the mark above the
   * records the seek reads again (skipped, lost). The dedup windows are rebuilt after that; one
   * whose bronze read fails is left to the next write, which rebuilds it before it checks a
   * batch (retrying here would hold the write, and a rebalance waiting for it, through an outage).
   */
  private async resync(records: readonly BatchRecord[]): Promise<void> {
    const tps = [...lastOffsets(records).values()].map((v) => v.tp);
    const contract = records[0].contract;
    const written = await this.options.store.writtenOffsets(contract, tps.map((tp) => this.book.appId(tp)));
    for (const tp of tps) {
      const offset = this.book.assign(tp, written.get(this.book.appId(tp)));
      this.seeks.set(tpKey(tp), { ...tp, offset });
      this.batcher.retain((r) => tpKey(r) !== tpKey(tp));
      this.options.logger.warn({ ...tp, offset }, 'offsets moved under this worker; re-seeking from the table');
    }
    for (const tp of tps) {
      if (!this.owned.has(tpKey(tp))) continue;
      const dedup = await this.rebuildDedup(contract, tp.partition, this.dedupShare(this.owned.size)).catch((err: unknown) => {
        this.options.logger.warn({ err, ...tp }, 'dedup window rebuild failed; the next write rebuilds it first');
        return undefined;
      });
      const owned = this.owned.get(tpKey(tp));
      if (owned) owned.dedup = dedup;
    }
  }

  private async onAssign(parts: PartitionRef[]): Promise<TopicPartitionOffset[]> {
    const out: TopicPartitionOffset[] = [];
    const byContract = new Map<AnyContract, PartitionRef[]>();
    for (const p of parts) {
      const contract = this.options.contractOfTopic.get(p.topic);
      if (!contract) continue;
      byContract.set(contract, [...(byContract.get(contract) ?? []), p]);
    }
    // The windows share the process's id budget evenly.
    const share = this.dedupShare(this.owned.size + parts.length);
    for (const [contract, list] of byContract) {
      this.pollWatch.progress(`poll: assign ${contract.name}: read bronze offsets`);
      const written = await this.retrying('read bronze offsets', () =>
        this.options.store.writtenOffsets(contract, list.map((p) => this.book.appId(p))),
      );
      for (const p of list) {
        this.pollWatch.progress(`poll: assign ${p.topic}-${p.partition}: rebuild dedup window`);
        const dedup = await this.retrying('rebuild dedup window', () => this.rebuildDedup(contract, p.partition, share));
        const offset = this.book.assign(p, written.get(this.book.appId(p)));
        this.owned.set(tpKey(p), { tp: p, contract, dedup, takenUpTo: -1 });
        this.seeks.delete(tpKey(p)); // the assignment itself starts at the table's offset
        out.push({ topic: p.topic, partition: p.partition, offset });
      }
    }
    this.reshareDedup();
    this.options.groupWatch?.watch.assigned(out);
    this.pollWatch.progress('poll');
    this.options.logger.info({ partitions: out.map((o) => `${o.topic}-${o.partition}@${o.offset}`) }, 'partitions assigned, resuming from bronze offsets');
    // The group learns the table's offsets at once, once the assignment is applied: a partition
    // without traffic since would otherwise keep an older (or no) advice, which is lag to KEDA.
    setImmediate(() => this.adviseGroup(out));
    return out;
  }

  private async onRevoke(parts: PartitionRef[]): Promise<void> {
    // Let a running write finish first (it is the last chance to store these partitions' offsets).
    this.pollWatch.progress('poll: revoke: wait for the bronze write in flight');
    await this.inflight;
    this.pollWatch.progress('poll');
    for (const p of parts) {
      this.book.revoke(p);
      this.owned.delete(tpKey(p));
      this.seeks.delete(tpKey(p));
    }
    // A failing contract with no partition left here is not this worker's to retry any more.
    for (const name of this.failing.keys()) {
      if (![...this.owned.values()].some((o) => o.contract.name === name)) this.failing.delete(name);
    }
    this.options.groupWatch?.watch.revoked(parts);
    this.reshareDedup();
    // Buffered records of revoked partitions are dropped: the next owner re-reads them. Their
    // dead letters not sent yet too (the write in flight, with its DLQ flush, ended above).
    this.batcher.retain((r) => this.book.owns(r));
    const deadLettersDropped = this.options.deadLetters.dropUnless((p) => this.book.owns(p));
    if (this.pending) {
      for (const [name, records] of this.pending) {
        const kept = records.filter((r) => this.book.owns(r));
        if (kept.length === 0) this.pending.delete(name);
        else this.pending.set(name, kept);
      }
      if (this.pending.size === 0) this.pending = undefined;
      this.pendingBytes = bytesOf(this.pending);
    }
    if (this.failing.size === 0) {
      // Readiness stayed on a failure no longer this worker's (unready a minute later with
      // nothing failing), and the DLQ's pause with it. The next write judges storage.
      if (this.options.deadLetters.size === 0) this.flow.storageRecovered();
      this.storageFailingSince = undefined;
    }
    this.options.logger.info({ partitions: parts.map((p) => `${p.topic}-${p.partition}`), deadLettersDropped }, 'partitions revoked');
  }

  private async rebuildDedup(contract: AnyContract, partition: number, maxIds: number): Promise<DedupWindow> {
    const dedup = new DedupWindow(this.options.dedupWatermarkMs, { maxIds });
    if (this.options.dedupWatermarkMs > 0) {
      const { ids, truncated } = await this.options.store.recentEventIds(contract, partition, this.options.dedupWatermarkMs, maxIds);
      dedup.load(ids, truncated);
    }
    return dedup;
  }

  /** Gives every owned window its part of the id budget after the owned set changed. */
  private reshareDedup(): void {
    const share = this.dedupShare(this.owned.size);
    for (const o of this.owned.values()) o.dedup?.setMaxIds(share);
  }

  /** Each window's part of the id budget when `partitions` are owned. */
  private dedupShare(partitions: number): number {
    return Math.max(1, Math.floor(this.options.dedupMaxIds / Math.max(1, partitions)));
  }

  /** Retries a storage read inside a rebalance hook (the hook must not give up on a slow store). */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const backoff = new Backoff(100, this.options.retryMaxMs);
    for (;;) {
      try {
        const value = await fn();
        this.storageFailingSince = undefined;
        return value;
      } catch (err) {
        this.storageFailingSince ??= this.now();
        if (this.stopping) throw err;
        const delay = backoff.next();
        this.options.logger.warn({ err, retryInMs: delay }, `${what} failed, retrying`);
        await sleep(delay, this.abort.signal);
        // Storage answered (with an error): a slow outage, not a hang; judge the next attempt alone.
        this.pollWatch.progress(`poll: ${what} (retrying)`);
      }
    }
  }

  private updateFlow(consumer: Tier1Consumer): void {
    // Records on their way to the DLQ count too: a topic of undecodable records and a slow DLQ
    // producer grew that queue with every poll, and nothing paused.
    const buffered = this.batcher.heldBytes + this.pendingBytes + this.options.deadLetters.heldBytes;
    this.stats.maxBufferedBytes = Math.max(this.stats.maxBufferedBytes, buffered);
    const state = this.flow.setBuffered(buffered);
    // All partitions pause under memory pressure or a failing DLQ. A failing contract's alone
    // until its back-off ends, and again once a batch of it is held for the retry (a backlog read
    // whole at every retry and dropped when it fails again filled the bound for everyone).
    const now = this.now();
    // Counted only while a failing contract is being retried (a pass over what is held).
    const held = [...this.failing.keys()].some((name) => !this.backingOff(name, now)) ? this.heldPerFailingContract() : undefined;
    const holdsOff = (topic: string) => {
      const name = this.options.contractOfTopic.get(topic)?.name ?? '';
      if (!this.failing.has(name)) return false;
      const h = held?.get(name) ?? { records: 0, bytes: 0 };
      return this.backingOff(name, now) || h.records >= this.options.bounds.maxRecords || h.bytes >= this.options.bounds.maxBytes;
    };
    const paused = (p: PartitionRef) => state !== 'flowing' || holdsOff(p.topic);
    const assigned = consumer.assignment();
    const pausedKeys = new Set(consumer.paused().map(tpKey));
    const toPause = assigned.filter((p) => paused(p) && !pausedKeys.has(tpKey(p)));
    if (toPause.length > 0) {
      consumer.pause(toPause);
      this.options.logger.info({ state, failingContracts: [...this.failing.keys()], bufferedBytes: buffered, partitions: toPause.length }, 'consumption paused');
    }
    const toResume = consumer.paused().filter((p) => !paused(p));
    if (toResume.length > 0) {
      consumer.resume(toResume);
      this.options.logger.info({ bufferedBytes: buffered, partitions: toResume.length }, 'consumption resumed');
    }
    for (const topic of new Set(assigned.map((p) => p.topic))) {
      this.options.metrics.pausedPartitions.set(consumer.paused().filter((p) => p.topic === topic).length, { topic });
    }
  }

  /** The records and bytes each failing contract holds (waiting and in the batcher). */
  private heldPerFailingContract(): Map<string, { records: number; bytes: number }> {
    const held = new Map<string, { records: number; bytes: number }>();
    const count = (r: BatchRecord) => {
      if (!this.failing.has(r.contract.name)) return;
      const h = held.get(r.contract.name) ?? { records: 0, bytes: 0 };
      h.records += 1;
      h.bytes += r.bytes;
      held.set(r.contract.name, h);
    };
    for (const [name, records] of this.pending ?? []) if (this.failing.has(name)) records.forEach(count);
    this.batcher.forEach(count);
    return held;
  }
}

/** The bytes of the records waiting per contract. */
function bytesOf(pending: ReadonlyMap<string, readonly BatchRecord[]> | undefined): number {
  let bytes = 0;
  for (const records of pending?.values() ?? []) for (const r of records) bytes += r.bytes;
  return bytes;
}
