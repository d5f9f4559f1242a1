import {
  KafkaConsumer as NativeConsumer,
  CODES,
  type LibrdKafkaError,
  type Message,
  type TopicPartition,
} from '@confluentinc/kafka-javascript';
import { KAFKA_CHANNELS, hasSubscribers, publish } from '../channels';
import { baseProperties, callback, type RdkafkaProperties } from '../connection';
import { kafkaError, translateKafkaError, type KafkaError } from '../errors';
import { explainUnreachable } from '../wire/connection';
import { CONSUMER_DEFAULTS, type ConsumerOptions } from './options';
import type { ConsumedMessage, PartitionLag, PartitionRef, TopicPartitionOffset } from './types';

// The native consume call blocks a libuv worker for at most this long, so close() and
// rebalance handling never wait longer than one slice.
const CONSUME_SLICE_MS = 100;
/** Messages a fetch ahead takes per native call (the first ones are handed on while the next are built). */
const FETCH_AHEAD_SLICE = 1000;

interface RebalanceEvent {
  kind: 'assign' | 'revoke';
  partitions: PartitionRef[];
}

/** librdkafka properties of a batch consumer: defaults, caller overrides, then the invariants. */
export function consumerProperties(options: ConsumerOptions): RdkafkaProperties {
  const o = { ...CONSUMER_DEFAULTS, ...options };
  return {
    'auto.offset.reset': o.autoOffsetReset,
    'session.timeout.ms': o.sessionTimeoutMs,
    'max.poll.interval.ms': o.maxPollIntervalMs,
    'queued.max.messages.kbytes': o.maxPrefetchKbytes,
    'fetch.queue.backoff.ms': o.fetchBackoffMs,
    // A subscribed topic created after the consumer started (or one of several missing) is found
    // at this interval: librdkafka's 5 minutes left a service consuming nothing that long.
    'topic.metadata.refresh.interval.ms': 30_000,
    ...baseProperties(options),
    'group.id': options.groupId,
    // Chosen by the option only (the transactional processor forces read_committed).
    'isolation.level': o.isolationLevel,
    // Invariants: offsets move only when the application says so.
    'enable.auto.commit': false,
    'enable.auto.offset.store': false,
    'enable.partition.eof': false,
  };
}

/** Interned partition keys by topic, indexed by partition. */
const partitionKeys = new Map<string, string[]>();

/**
 * Key of a partition in maps and sets. Interned: the same string for the same partition every
 * time, so maps hash it once; a key built per message was hashed again at every lookup.
 */
export function partitionKey(p: PartitionRef): string {
  if (!Number.isInteger(p.partition) || p.partition < 0) return `${p.topic}\u0000${p.partition}`;
  let byPartition = partitionKeys.get(p.topic);
  if (byPartition === undefined) {
    byPartition = [];
    partitionKeys.set(p.topic, byPartition);
  }
  return (byPartition[p.partition] ??= `${p.topic}\u0000${p.partition}`);
}

/** The offsets to commit after processing `messages`: per partition, the highest offset + 1. */
export function nextOffsets(messages: readonly ConsumedMessage[]): TopicPartitionOffset[] {
  const next = new Map<string, TopicPartitionOffset>();
  for (const m of messages) {
    const k = partitionKey(m);
    const current = next.get(k);
    if (current === undefined || current.offset <= m.offset) next.set(k, { topic: m.topic, partition: m.partition, offset: m.offset + 1 });
  }
  return [...next.values()];
}

/**
 * Consumer-group member that hands out bounded batches and never commits on its own.
 *
 * Rebalance hooks run inside `poll()` (Java's model): never concurrently with the application's
 * handling of a batch, and a batch never holds messages of a partition revoked before it was
 * returned. Pause/resume gives backpressure without leaving the group.
 */
export class BatchConsumer {
  /** Client id used in events. */
  readonly clientId: string;
  /** Consumer group id. */
  readonly groupId: string;
  /** @internal the native client, for sendOffsetsToTransaction. */
  readonly native: NativeConsumer;
  private readonly options: ConsumerOptions;
  private readonly maxBatch: number;
  private readonly maxBytes: number;
  private readonly maxWaitMs: number;
  private readonly assigned = new Map<string, PartitionRef>();
  private readonly pausedSet = new Map<string, PartitionRef>();
  /** When the lag of every held partition was last published (performance.now()). */
  private lagPublishedAt = -Infinity;
  private readonly rebalances: RebalanceEvent[] = [];
  /** Messages a native call returned past a batch's bounds or for a paused partition: later batches start with them. */
  private carried: Message[] = [];
  /** The conversions fetchAhead made of the messages it carried, handed out by the next poll (then forgotten). */
  private readonly convertedAhead = new Map<Message, ConsumedMessage>();
  private meanMessageBytes = 0;
  /** Revokes applied so far: a poll re-checks its batch only when one happened meanwhile. */
  private revokes = 0;
  private hookError: KafkaError | undefined;
  private connected = false;
  private polling: Promise<ConsumedMessage[]> | undefined;
  private stopRequested = false;
  private closeRequested = false;
  private closing: Promise<void> | undefined;

  constructor(options: ConsumerOptions) {
    if (options.topics.length === 0) throw new RangeError('topics must name at least one topic');
    this.options = options;
    this.clientId = options.clientId ?? 'sluice';
    this.groupId = options.groupId;
    this.maxBatch = options.maxBatchMessages ?? CONSUMER_DEFAULTS.maxBatchMessages;
    this.maxBytes = options.maxBatchBytes ?? CONSUMER_DEFAULTS.maxBatchBytes;
    this.maxWaitMs = options.maxBatchWaitMs ?? CONSUMER_DEFAULTS.maxBatchWaitMs;
    this.native = new NativeConsumer({
      ...consumerProperties(options),
      // librdkafka calls this on its thread and the binding forwards it to the JS loop; we only
      // queue it, and poll() applies it (assign/unassign) after running the application hooks.
      rebalance_cb: (err: LibrdKafkaError, partitions: TopicPartition[]) => this.queueRebalance(err, partitions),
      // The broker's answer to a commit arrives here, after commit() resolved (the binding only
      // queues it): a refused commit would otherwise go unseen.
      offset_commit_cb: (err: LibrdKafkaError | undefined, offsets: TopicPartitionOffset[]) => this.onCommitted(err, offsets),
    } as never);
    this.native.on('event.error', (err) => {
      const e = translateKafkaError(err, { operation: 'consumer' });
      publish(KAFKA_CHANNELS.clientError, { clientId: this.clientId, code: e.code, retryable: e.retryable, message: e.message });
    });
  }

  /** Connects and subscribes; partitions arrive through `poll()`. */
  async connect(timeoutMs = 10_000): Promise<void> {
    try {
      await callback((done) => this.native.connect({ timeout: timeoutMs }, (err) => done(err)));
      this.native.setDefaultConsumeTimeout(CONSUME_SLICE_MS);
      // Wait for the first message only; then take what is already fetched (batch by count).
      (this.native as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(v: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
      this.native.subscribe([...this.options.topics]);
    } catch (err) {
      // Connected but could not subscribe: release the native handle, or the process never exits.
      if (this.native.isConnected()) await callback((done) => this.native.disconnect((e) => done(e))).catch(() => undefined);
      throw await explainUnreachable(this.options, translateKafkaError(err, { operation: 'consumer.connect', topic: this.options.topics.join(',') }), timeoutMs);
    }
    this.connected = true;
  }

  /** Partitions currently assigned to this member. */
  assignment(): PartitionRef[] {
    return [...this.assigned.values()];
  }

  /** Partitions currently paused. */
  paused(): PartitionRef[] {
    return [...this.pausedSet.values()];
  }

  /**
   * Returns the next batch: up to `maxBatchMessages`, ending with the message that reaches
   * `maxBatchBytes`, waiting at most `maxBatchWaitMs` (an empty array when nothing arrived).
   * Runs pending rebalance hooks first. One poll at a time.
   */
  async poll(): Promise<ConsumedMessage[]> {
    if (!this.connected) throw kafkaError('KAFKA_NOT_CONNECTED', 'consumer.poll: consumer is not connected');
    if (this.polling !== undefined) throw kafkaError('KAFKA_INVALID_CONFIG', 'consumer.poll: a poll is already running');
    this.polling = this.pollBatch();
    try {
      return await this.polling;
    } finally {
      this.polling = undefined;
    }
  }

  /**
   * Takes what librdkafka has already fetched, up to about one batch, into the carry without
   * waiting and without running rebalance hooks; the next `poll()` applies pending rebalances
   * first (a revoke drops what it took) and then hands these messages out. For a caller whose
   * batch is waiting on the broker (a transaction's commit): the client's conversion of the
   * messages, main-thread work, then overlaps that wait instead of following it. Returns the
   * messages it took, converted: the same objects the next poll hands out (unless a rebalance or
   * a `seek()` drops them first). Not concurrently with `poll()`; a `seek()` after it drops what
   * it took of that partition.
   */
  async fetchAhead(onTaken?: (messages: readonly ConsumedMessage[]) => void): Promise<readonly ConsumedMessage[]> {
    if (!this.connected || this.closeRequested) return [];
    if (this.polling !== undefined) throw kafkaError('KAFKA_INVALID_CONFIG', 'consumer.fetchAhead: a poll is already running');
    const batchCount = this.meanMessageBytes > 0 ? Math.min(this.maxBatch, Math.ceil(this.maxBytes / this.meanMessageBytes)) : this.maxBatch;
    let room = batchCount - this.carried.length;
    if (room <= 0) return [];
    const taking = (async () => {
      this.native.setDefaultConsumeTimeout(0);
      const all: ConsumedMessage[] = [];
      // In slices, so `onTaken` can start on the first while the next is built.
      while (room > 0 && !this.closeRequested) {
        const slice = Math.min(room, FETCH_AHEAD_SLICE);
        const taken = await this.consumeNative(slice);
        this.carried.push(...taken);
        // Converted now, during the wait, and handed out as these same objects.
        const converted = taken.map(toMessage);
        for (let i = 0; i < taken.length; i++) this.convertedAhead.set(taken[i], converted[i]);
        all.push(...converted);
        if (converted.length > 0) onTaken?.(converted);
        room -= taken.length;
        if (taken.length < slice) break;
      }
      return all;
    })();
    this.polling = taking;
    try {
      return await taking;
    } finally {
      this.polling = undefined;
    }
  }

  /**
   * Polls and hands each non-empty batch to `handler` until `stop()`/`close()`; rejects with the
   * first error (handler's or the client's). Offsets are the handler's business (`commit`).
   */
  async run(handler: (batch: ConsumedMessage[]) => Promise<void> | void): Promise<void> {
    this.stopRequested = false;
    while (!this.stopRequested && this.connected) {
      const batch = await this.poll();
      if (batch.length > 0) await handler(batch);
    }
  }

  /** Makes `run()` return after the current batch. */
  stop(): void {
    this.stopRequested = true;
  }

  /** Stops fetching and delivering these partitions (backpressure); the member keeps them. */
  pause(partitions: readonly PartitionRef[]): void {
    const owned = partitions.filter((p) => this.assigned.has(partitionKey(p)));
    if (owned.length === 0) return;
    this.call('consumer.pause', () => this.native.pause(owned.map(toNative)));
    for (const p of owned) this.pausedSet.set(partitionKey(p), { topic: p.topic, partition: p.partition });
    publish(KAFKA_CHANNELS.paused, { clientId: this.clientId, groupId: this.groupId, partitions: owned.map(toRef) });
  }

  /** Restarts fetching paused partitions. */
  resume(partitions: readonly PartitionRef[]): void {
    const owned = partitions.filter((p) => this.pausedSet.has(partitionKey(p)));
    if (owned.length === 0) return;
    this.call('consumer.resume', () => this.native.resume(owned.map(toNative)));
    for (const p of owned) this.pausedSet.delete(partitionKey(p));
    publish(KAFKA_CHANNELS.resumed, { clientId: this.clientId, groupId: this.groupId, partitions: owned.map(toRef) });
  }

  /** Moves the read position of an assigned partition; the next `poll()` reads from `offset`. Not while a poll or fetchAhead runs. */
  async seek(position: TopicPartitionOffset, timeoutMs = 10_000): Promise<void> {
    // A native consume in flight would add messages from the old position after the carry was dropped.
    if (this.polling !== undefined) throw kafkaError('KAFKA_INVALID_CONFIG', 'consumer.seek: a poll is running');
    try {
      await callback((done) => this.native.seek(toNativeOffset(position), timeoutMs, (err) => done(err)));
    } catch (err) {
      throw translateKafkaError(err, { operation: 'consumer.seek', topic: position.topic, partition: position.partition });
    }
    // What was carried over came from the old position; a refused seek leaves it valid.
    this.dropCarried([position]);
  }

  /**
   * Commits explicit offsets (the NEXT offset to read per partition; see {@link nextOffsets}).
   * Resolves once librdkafka has queued the commit, not when the broker took it: a commit the
   * broker refuses as a whole is published on the clientError channel (kafka_client_errors_total
   * by code; the message begins `consumer.commit:`), and one it took on offsetsCommitted. A refusal
   * of single partitions is not seen: the binding passes per-partition errors on as committed.
   */
  async commit(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    if (!this.connected) throw kafkaError('KAFKA_NOT_CONNECTED', 'consumer.commit: consumer is not connected');
    const native = this.native as unknown as { commitCb(o: unknown[], cb: (err: unknown) => void): void };
    try {
      await callback((done) => native.commitCb(offsets.map(toNativeOffset), (err) => done(err)));
    } catch (err) {
      throw translateKafkaError(err, { operation: 'consumer.commit' });
    }
  }

  /** librdkafka's answer to a commit: whole-request failures only (the binding drops per-partition errors). */
  private onCommitted(err: LibrdKafkaError | undefined, offsets: TopicPartitionOffset[]): void {
    if (err) {
      const e = translateKafkaError(err, { operation: 'consumer.commit' });
      publish(KAFKA_CHANNELS.clientError, { clientId: this.clientId, code: e.code, retryable: e.retryable, message: e.message });
      return;
    }
    const committed = (offsets ?? []).map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
    publish(KAFKA_CHANNELS.offsetsCommitted, { clientId: this.clientId, groupId: this.groupId, offsets: committed, transactional: false });
  }

  /** The group's committed offsets (next offset to read; null when none) for the given or assigned partitions. */
  async committed(
    partitions: readonly PartitionRef[] = this.assignment(),
    timeoutMs = 10_000,
  ): Promise<Array<PartitionRef & { offset: number | null }>> {
    try {
      const result = await callback<Array<{ topic: string; partition: number; offset?: number }>>((done) =>
        this.native.committed(partitions.map(toNative), timeoutMs, (err, tps) => done(err, tps)),
      );
      return result.map((r) => ({ topic: r.topic, partition: r.partition, offset: typeof r.offset === 'number' && r.offset >= 0 ? r.offset : null }));
    } catch (err) {
      throw translateKafkaError(err, { operation: 'consumer.committed' });
    }
  }

  /**
   * Lag of the assigned partitions from locally cached watermarks (no broker round trip);
   * partitions not fetched yet are left out.
   */
  lag(): PartitionLag[] {
    if (!this.connected || this.assigned.size === 0) return [];
    const positions = this.native.position(this.assignment().map(toNative));
    // librdkafka's position is past the carried-over messages; they are still to be read.
    const firstCarried = new Map<string, number>();
    for (const m of this.carried) if (!firstCarried.has(partitionKey(m))) firstCarried.set(partitionKey(m), m.offset);
    const out: PartitionLag[] = [];
    for (const p of positions) {
      if (typeof p.offset !== 'number' || p.offset < 0) continue;
      p.offset = Math.min(p.offset, firstCarried.get(partitionKey(p)) ?? p.offset);
      let high: number;
      try {
        high = this.native.getWatermarkOffsets(p.topic, p.partition).highOffset;
      } catch {
        continue;
      }
      if (typeof high !== 'number' || high < 0) continue;
      out.push({ topic: p.topic, partition: p.partition, nextOffset: p.offset, highWatermark: high, lag: Math.max(0, high - p.offset) });
    }
    return out;
  }

  /**
   * Stops polling, runs `onRevoke` for the partitions still held (last chance to commit),
   * leaves the group and disconnects. Idempotent.
   */
  close(timeoutMs = 10_000): Promise<void> {
    this.closing ??= this.doClose(timeoutMs);
    return this.closing;
  }

  private async doClose(_timeoutMs: number): Promise<void> {
    this.stopRequested = true;
    this.closeRequested = true;
    await this.polling?.catch(() => undefined);
    if (!this.connected) return;
    this.connected = false;
    if (this.assigned.size > 0) {
      const held = this.assignment();
      try {
        await this.options.onRevoke?.(held);
      } catch {
        // The application is shutting down; a failed hook must not keep the member in the group.
      }
      this.assigned.clear();
      this.pausedSet.clear();
      publish(KAFKA_CHANNELS.revoked, { clientId: this.clientId, groupId: this.groupId, partitions: held });
    }
    this.dropCarried('all');
    // Rebalances that reached JS after the last poll applied them: librdkafka's close waits for
    // a revoke to be acknowledged (for a lost assignment it never revokes again), so dropping
    // them could leave close() blocked until the process's hard exit.
    for (const event of this.rebalances.splice(0)) this.acknowledge(event.kind, event.partitions.map(toNative));
    try {
      this.native.unsubscribe();
    } catch {
      // already unsubscribed or not connected: nothing to leave
    }
    await callback((done) => this.native.disconnect((err) => done(err))).catch(() => undefined);
  }

  private async pollBatch(): Promise<ConsumedMessage[]> {
    const started = performance.now();
    const deadline = started + this.maxWaitMs;
    // Raw until handed out: librdkafka's position is already past them, so a poll that fails
    // gives them back to the carry instead of losing them.
    let taken: Message[] = [];
    let bytes = 0;
    const full = () => taken.length >= this.maxBatch || bytes >= this.maxBytes;
    // Messages of partitions no longer ours are dropped. Those past the bounds, and those of
    // paused partitions (fetched before the pause), wait in order for a later poll, and so does
    // every later message of a partition with one waiting: a revoke that empties part of a full
    // batch lets it take more, and a partition's newer messages went out before its carried ones
    // (a gap in the batch, whose offsets commit past records not handed out yet).
    const carriedKeys = new Set<string>();
    const take = (messages: readonly Message[]) => {
      // Messages come in runs of one partition: its key is built once per run.
      let key = '';
      let last: Message | undefined;
      for (const m of messages) {
        if (last === undefined || m.partition !== last.partition || m.topic !== last.topic) key = partitionKey(m);
        last = m;
        if (!this.assigned.has(key)) continue;
        if (full() || carriedKeys.has(key) || (this.pausedSet.size > 0 && this.pausedSet.has(key))) {
          this.carried.push(m);
          carriedKeys.add(key);
          continue;
        }
        taken.push(m);
        bytes += heldBytes(m);
      }
    };
    const ours = () => {
      taken = taken.filter((m) => this.assigned.has(partitionKey(m)));
      bytes = taken.reduce((sum, m) => sum + heldBytes(m), 0);
    };
    try {
      await this.applyRebalances();
      take(this.carried.splice(0));
      // At least one native call per poll, even when carried messages fill the batch: librdkafka
      // serves rebalances and resets max.poll.interval.ms only inside one.
      for (let calls = 0; !this.closeRequested && (calls === 0 || !full()); calls++) {
        const left = deadline - performance.now();
        if (calls > 0 && left <= 0) break;
        this.native.setDefaultConsumeTimeout(full() ? 0 : Math.max(1, Math.min(CONSUME_SLICE_MS, Math.ceil(left))));
        // Ask for about as many messages as the byte bound has room for, at the last batch's
        // mean size, so little is carried over.
        const room = this.meanMessageBytes > 0 ? Math.ceil((this.maxBytes - bytes) / this.meanMessageBytes) : Infinity;
        take(await this.consumeNative(full() ? 1 : Math.max(1, Math.min(this.maxBatch - taken.length, room))));
        // Rebalance events that arrived while librdkafka was fetching: apply them before handing
        // anything out, and drop what a revoke took from us (a revoke also drops the carry).
        const revokes = this.revokes;
        await this.applyRebalances();
        if (this.revokes !== revokes) ours();
      }
    } catch (err) {
      ours();
      this.carried = [...taken, ...this.carried];
      throw err;
    }
    const batch = this.convertedAhead.size === 0 ? taken.map(toMessage) : taken.map((m) => this.convertedAhead.get(m) ?? toMessage(m));
    // Messages still carried are converted again by a later poll: the map holds about one batch.
    this.convertedAhead.clear();
    if (batch.length > 0) {
      this.meanMessageBytes = bytes / batch.length;
      publish(KAFKA_CHANNELS.consumerBatch, {
        clientId: this.clientId,
        groupId: this.groupId,
        count: batch.length,
        bytes,
        waitMs: performance.now() - started,
      });
      this.publishBatchLag(batch);
    }
    this.publishLag();
    return batch;
  }

  private consumeNative(count: number): Promise<Message[]> {
    return new Promise<Message[]>((resolve, reject) => {
      this.native.consume(count, (err, messages) => {
        if (!err) return resolve(messages ?? []);
        const code = (err as LibrdKafkaError).code;
        // A timeout just means "nothing more yet"; a fatal or unknown error surfaces.
        if (code === CODES.ERRORS.ERR__TIMED_OUT || code === CODES.ERRORS.ERR__TIMED_OUT_QUEUE) return resolve([]);
        reject(translateKafkaError(err, { operation: 'consumer.poll' }));
      });
    });
  }

  private queueRebalance(err: LibrdKafkaError | undefined, partitions: TopicPartition[]): void {
    const kind = err?.code === CODES.ERRORS.ERR__ASSIGN_PARTITIONS ? 'assign' : 'revoke';
    // Closing: librdkafka's close waits until the final revoke is acknowledged by an unassign;
    // the application's onRevoke already ran in close().
    if (!this.connected) return this.acknowledge(kind, partitions);
    this.rebalances.push({ kind, partitions: partitions.map(toRef) });
  }

  /** Acknowledges a rebalance to librdkafka without the application's hooks (closing). */
  private acknowledge(kind: RebalanceEvent['kind'], partitions: TopicPartition[]): void {
    try {
      if (kind === 'assign') this.nativeAssign(partitions);
      else this.nativeUnassign(partitions);
    } catch {
      // the client is already gone: nothing left to acknowledge
    }
  }

  private async applyRebalances(): Promise<void> {
    while (this.rebalances.length > 0) {
      const event = this.rebalances[0];
      if (event.kind === 'assign') {
        // A failed hook leaves the assignment at the head of the queue: the next poll runs the
        // hook again. Dropped, the partitions stayed this member's in the group, never read.
        if (!(await this.assign(event.partitions))) break;
      } else {
        await this.revoke(event.partitions);
      }
      this.rebalances.shift();
    }
    if (this.hookError !== undefined) {
      const err = this.hookError;
      this.hookError = undefined;
      throw err;
    }
  }

  private cooperative(): boolean {
    return (this.native as unknown as { rebalanceProtocol(): string }).rebalanceProtocol() === 'COOPERATIVE';
  }

  /** Takes partitions as the rebalance protocol wants (incrementally under COOPERATIVE, which refuses the eager call). */
  private nativeAssign(partitions: TopicPartition[]): void {
    if (this.cooperative()) (this.native as unknown as { incrementalAssign(p: unknown[]): void }).incrementalAssign(partitions);
    else this.native.assign(partitions);
  }

  /** Gives partitions back as the rebalance protocol wants (eager: all of them). */
  private nativeUnassign(partitions: TopicPartition[]): void {
    if (this.cooperative()) (this.native as unknown as { incrementalUnassign(p: unknown[]): void }).incrementalUnassign(partitions);
    else this.native.unassign();
  }

  /** Runs onAssign and assigns from the offsets it returns; false when the hook failed (nothing assigned). */
  private async assign(partitions: PartitionRef[]): Promise<boolean> {
    let start: readonly TopicPartitionOffset[] | void;
    try {
      start = await this.options.onAssign?.(partitions);
    } catch (err) {
      // Without its stored offsets the application cannot know where to resume: do not
      // assign (so nothing is read from a wrong position) and fail the poll.
      this.hookError = translateHookError(err, 'consumer.onAssign');
      return false;
    }
    const from = new Map((start ?? []).map((o) => [partitionKey(o), o.offset]));
    const withOffsets = partitions.map((p) => {
      const offset = from.get(partitionKey(p));
      return offset === undefined ? toNative(p) : toNativeOffset({ ...p, offset });
    });
    this.call('consumer.assign', () => this.nativeAssign(withOffsets));
    for (const p of partitions) this.assigned.set(partitionKey(p), p);
    publish(KAFKA_CHANNELS.assigned, { clientId: this.clientId, groupId: this.groupId, partitions });
    return true;
  }

  private async revoke(partitions: PartitionRef[]): Promise<void> {
    try {
      await this.options.onRevoke?.(partitions);
    } catch (err) {
      this.hookError = translateHookError(err, 'consumer.onRevoke');
    }
    // Always give the partitions back, or the whole group waits on this member.
    const cooperative = this.cooperative();
    // librdkafka keeps a partition's pause through an unassign and the next assign: one paused
    // here came back paused with nothing here knowing it, so it was never fetched again.
    // Best effort: a failed resume must not keep the partitions from going back below.
    const pausedGone = cooperative ? partitions.filter((p) => this.pausedSet.has(partitionKey(p))) : [...this.pausedSet.values()];
    try {
      if (pausedGone.length > 0) this.native.resume(pausedGone.map(toNative));
    } catch {
      // Left paused in librdkafka, as before this resume existed: better than a group that waits
      // on a member which never gave its partitions back.
    }
    this.call('consumer.unassign', () => this.nativeUnassign(partitions.map(toNative)));
    if (cooperative) {
      for (const p of partitions) {
        this.assigned.delete(partitionKey(p));
        this.pausedSet.delete(partitionKey(p));
      }
    } else {
      this.assigned.clear();
      this.pausedSet.clear();
    }
    // Whoever reads these partitions next starts from the committed offsets, this member too
    // when they come back: what it had carried over would be delivered twice.
    this.dropCarried(cooperative ? partitions : 'all');
    this.revokes++;
    publish(KAFKA_CHANNELS.revoked, { clientId: this.clientId, groupId: this.groupId, partitions });
  }

  /** Forgets carried-over messages of these partitions (they will be fetched again). */
  private dropCarried(partitions: readonly PartitionRef[] | 'all'): void {
    if (partitions === 'all') {
      this.carried = [];
      return;
    }
    const gone = new Set(partitions.map(partitionKey));
    this.carried = this.carried.filter((m) => !gone.has(partitionKey(m)));
  }

  /** The lag of the partitions a batch came from (cached watermarks: no broker round trip). */
  private publishBatchLag(batch: readonly ConsumedMessage[]): void {
    if (!hasSubscribers(KAFKA_CHANNELS.lag)) return;
    for (const next of nextOffsets(batch)) {
      try {
        const high = this.native.getWatermarkOffsets(next.topic, next.partition).highOffset;
        if (typeof high === 'number' && high >= 0) {
          this.publishPartitionLag(next, high - next.offset);
        }
      } catch {
        // watermarks not cached yet: no lag sample this time
      }
    }
  }

  /**
   * The lag of every partition this member holds, at most once a second after any poll: polls
   * that deliver nothing included (published only with batches, the gauge froze exactly when
   * lag grew with nothing delivered). A paused partition is not fetched, so its cached high
   * watermark goes stale: its lag is asked of the broker instead, in the background.
   */
  private publishLag(): void {
    const now = performance.now();
    if (now - this.lagPublishedAt < LAG_PUBLISH_INTERVAL_MS || !hasSubscribers(KAFKA_CHANNELS.lag)) return;
    let lags: PartitionLag[];
    try {
      lags = this.lag();
    } catch {
      return; // positions unavailable (closing): no sample this time
    }
    // Nothing known yet (no position before the first fetch): the next poll tries again.
    if (lags.length === 0) return;
    this.lagPublishedAt = now;
    for (const l of lags) {
      if (this.pausedSet.has(partitionKey(l))) this.publishPausedLag(l);
      else this.publishPartitionLag(l, l.lag);
    }
  }

  private publishPartitionLag(p: PartitionRef, lag: number): void {
    publish(KAFKA_CHANNELS.lag, { groupId: this.groupId, topic: p.topic, partition: p.partition, lag: Math.max(0, lag) });
  }

  private publishPausedLag(l: PartitionLag): void {
    const key = partitionKey(l);
    this.native.queryWatermarkOffsets(l.topic, l.partition, 5000, (err, offsets) => {
      if (err || typeof offsets?.highOffset !== 'number' || offsets.highOffset < 0) return;
      // The answer may come after a revoke set this partition's lag to 0 here: a late value
      // would then stay, as nothing of this member reports the partition again.
      if (!this.connected || !this.assigned.has(key) || !this.pausedSet.has(key)) return;
      this.publishPartitionLag(l, offsets.highOffset - l.nextOffset);
    });
  }

  private call(operation: string, run: () => unknown): void {
    try {
      run();
    } catch (err) {
      throw translateKafkaError(err, { operation });
    }
  }
}

/** Lag samples per partition at most this often, ms. */
const LAG_PUBLISH_INTERVAL_MS = 1000;

function translateHookError(err: unknown, operation: string): KafkaError {
  return kafkaError('KAFKA_UNKNOWN', `${operation}: ${err instanceof Error ? err.message : String(err)}`, {
    cause: err,
    retryable: false,
    details: { operation },
  });
}

function toRef(p: { topic: string; partition: number }): PartitionRef {
  return { topic: p.topic, partition: p.partition };
}

function toNative(p: PartitionRef): TopicPartition {
  return { topic: p.topic, partition: p.partition };
}

function toNativeOffset(p: TopicPartitionOffset): { topic: string; partition: number; offset: number } {
  return { topic: p.topic, partition: p.partition, offset: p.offset };
}

/**
 * Bytes a fetched message holds: value, key and headers. The client's `size` is the value's
 * alone, so records with a tiny value and a large key or headers passed the batch byte bound by
 * thousands (a backlog of them could exhaust memory and crash-loop the consumer). Names and
 * string values count in UTF-8 bytes, as they travel (a string's length is UTF-16 units).
 */
function heldBytes(m: Message): number {
  let n = m.size + (m.key === undefined || m.key === null ? 0 : typeof m.key === 'string' ? Buffer.byteLength(m.key) : m.key.length);
  for (const h of m.headers ?? []) for (const k in h) n += Buffer.byteLength(k) + (Buffer.isBuffer(h[k]) ? (h[k] as Buffer).length : Buffer.byteLength(String(h[k])));
  return n;
}

function toMessage(m: Message): ConsumedMessage {
  const headers: Record<string, Buffer> = {};
  let repeatedHeaders: Record<string, Buffer[]> | undefined;
  for (const h of m.headers ?? []) {
    for (const [k, v] of Object.entries(h)) {
      const value = Buffer.isBuffer(v) ? v : Buffer.from(String(v));
      // Own names only: a first `constructor` or `toString` header is not a repeat of Object's.
      // (A header named `__proto__` does not come through the client at all.)
      if (Object.hasOwn(headers, k)) {
        const earlier = headers[k];
        repeatedHeaders ??= Object.create(null) as Record<string, Buffer[]>;
        (repeatedHeaders[k] ??= [earlier]).push(value);
      }
      headers[k] = value;
    }
  }
  const key = m.key === undefined || m.key === null ? null : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key);
  const message: ConsumedMessage = { topic: m.topic, partition: m.partition, offset: m.offset, key, value: m.value, timestamp: m.timestamp, headers, size: m.size };
  if (repeatedHeaders !== undefined) message.repeatedHeaders = repeatedHeaders;
  return message;
}
