import type { AnyContract } from '@sluice/contracts';
import type { BronzeRecord } from './bronze-record';
import type { DedupKey } from './dedup-window';
import type { TopicPartition } from './offset-book';

/** One partition's offsets in a bronze commit. */
export interface PartitionCommit {
  readonly tp: TopicPartition;
  readonly appId: string;
  /** The txn version this batch resumed from (undefined: the table had none). */
  readonly expected: number | undefined;
  /** Last offset of the batch for this partition; becomes the txn version. */
  readonly last: number;
}

/** A dedup key with the bronze bucket of its entity. */
export type BucketedKey = DedupKey & { readonly bucket: number };

/**
 * What tier 1 needs from the bronze tables. Implemented over libs/lake by {@link LakeBronzeStore};
 * tests of the loop use the same implementation on a real directory.
 */
export interface BronzeStore {
  /** The txn version (last offset written) of each appId in the latest table version. */
  writtenOffsets(contract: AnyContract, appIds: readonly string[]): Promise<Map<string, number>>;
  /**
   * Ids and event times committed for partition `partition` of the contract's topic within
   * `watermarkMs` of that partition's newest event time (rebuilds the dedup window): the newest
   * `limit` of them, `truncated` when there were more.
   */
  recentEventIds(contract: AnyContract, partition: number, watermarkMs: number, limit: number): Promise<{ ids: DedupKey[]; truncated: boolean }>;
  /**
   * Which of `candidates` are committed (same id and event time), looked for in the bronze
   * buckets they belong to: a copy of an event has its entity key, so its bucket, whichever
   * Kafka partition it came through (partitions added to the topic move keys between them).
   */
  committedEventIds(contract: AnyContract, candidates: readonly BucketedKey[]): Promise<Set<string>>;
  /**
   * Appends `records` and one txn per partition in ONE commit. Fails with MERGE_OFFSETS_MOVED
   * (not retryable) when a partition's txn in the table is not `expected` any more.
   */
  append(contract: AnyContract, records: readonly BronzeRecord[], partitions: readonly PartitionCommit[]): Promise<{ version: number }>;
}
