import type { ConnectionOptions } from '../connection';
import type { PartitionRef, TopicPartitionOffset } from './types';

/**
 * Called inside `poll()` when partitions are assigned, before any of their messages is
 * returned. Return the offsets (next offset to read) to start from — e.g. those a table commit
 * stored — or nothing to start from the group's committed offsets (else `autoOffsetReset`).
 */
export type OnAssign = (
  partitions: PartitionRef[],
) => Promise<readonly TopicPartitionOffset[] | void> | readonly TopicPartitionOffset[] | void;

/**
 * Called inside `poll()` (or `close()`) when partitions are taken away, never while the
 * application holds a batch: the last chance to commit their offsets.
 */
export type OnRevoke = (partitions: PartitionRef[]) => Promise<void> | void;

/**
 * Batch consumer settings. Invariants not configurable: no auto-commit, no auto offset store
 * (offsets move only through `commit` or a transaction).
 */
export interface ConsumerOptions extends ConnectionOptions {
  /** Consumer group id. */
  groupId: string;
  /** Topics to subscribe to. */
  topics: readonly string[];
  /** `read_committed` (default) hides aborted and open transactions; `read_uncommitted` does not. */
  isolationLevel?: 'read_committed' | 'read_uncommitted';
  /** Where to start when the group has no committed offset; default `earliest`. */
  autoOffsetReset?: 'earliest' | 'latest' | 'error';
  /** Max messages per batch; default 500. */
  maxBatchMessages?: number;
  /**
   * Max bytes of message values per batch: a batch ends with the message that reaches it (so it
   * holds at most this plus one message). A native call returns whole fetches; what it returned
   * past the bound waits in the consumer for the next `poll()` (as does a failed poll's batch:
   * librdkafka's position is already past it), and a seek or revoke of its partition drops it.
   * Default 16 MiB.
   */
  maxBatchBytes?: number;
  /** Max time `poll()` waits to fill a batch, ms; it returns earlier when the batch is full; default 100. */
  maxBatchWaitMs?: number;
  /** Group session timeout, ms; default 10 000. */
  sessionTimeoutMs?: number;
  /** Max time between two `poll()` calls before the group evicts this member, ms; default 300 000. */
  maxPollIntervalMs?: number;
  /**
   * Max KiB of prefetched messages (`queued.max.messages.kbytes`; librdkafka applies it to the
   * consumer's one queue and may overshoot it by a fetch); default 2 048. 16 384 cost validate
   * about 100 MB more RSS in the e2e run, with no gain in throughput.
   */
  maxPrefetchKbytes?: number;
  /**
   * How long librdkafka postpones a partition's next fetch once the prefetch queue is over
   * {@link maxPrefetchKbytes} (`fetch.queue.backoff.ms`), ms; default 20. librdkafka's own
   * default, 1 000, starves a consumer that takes batches close to the queue's size: validate
   * draining a backlog in 5 000-event batches waited on fetches at 61 % CPU and 21.8k events/s,
   * and ran at 106 % CPU and 38.6k events/s with 20 (docs/bench/ingest-validate.md).
   */
  fetchBackoffMs?: number;
  /** Rebalance hook, see {@link OnAssign}. */
  onAssign?: OnAssign;
  /** Rebalance hook, see {@link OnRevoke}. */
  onRevoke?: OnRevoke;
}

/** Defaults of {@link ConsumerOptions}. */
export const CONSUMER_DEFAULTS = Object.freeze({
  isolationLevel: 'read_committed' as const,
  autoOffsetReset: 'earliest' as const,
  maxBatchMessages: 500,
  maxBatchBytes: 16 * 1024 * 1024,
  maxBatchWaitMs: 100,
  sessionTimeoutMs: 10_000,
  maxPollIntervalMs: 300_000,
  maxPrefetchKbytes: 2_048,
  fetchBackoffMs: 20,
});
