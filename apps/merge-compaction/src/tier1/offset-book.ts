import { partitionKey } from '@sluice/kafka';

/** A Kafka topic-partition. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Map key of a topic-partition: libs/kafka's interned key, built once per partition (tier 1 looks it up per record). */
export const tpKey: (tp: TopicPartition) => string = partitionKey;

/**
 * Offset bookkeeping of the tier-1 consumer. The bronze table's `txn` actions (appId per
 * topic-partition, version = last offset written, inclusive) are the only durable offset store;
 * this class mirrors them for the partitions this worker owns and says where to seek.
 *
 * Invariant: for an owned partition, `written` equals the txn version in the last bronze commit
 * this worker made or read, and records at or below it are never written again.
 */
export class OffsetBook {
  private readonly written = new Map<string, number>();
  /** Highest offset handed to the batcher, per partition: guards against re-delivery inside a session. */
  private readonly accepted = new Map<string, number>();
  private readonly owned = new Map<string, TopicPartition>();

  constructor(readonly appIdPrefix: string) {}

  /** The `txn` appId of a topic-partition: `<prefix><topic>-<partition>` (kafka-delta-ingest style). */
  appId(tp: TopicPartition): string {
    return `${this.appIdPrefix}${tp.topic}-${tp.partition}`;
  }

  /**
   * Takes ownership of `tp` whose last written offset in the table is `writtenInTable`
   * (undefined: never written). Returns the offset to seek to (0 = the beginning).
   */
  assign(tp: TopicPartition, writtenInTable: number | undefined): number {
    const key = tpKey(tp);
    this.owned.set(key, tp);
    if (writtenInTable === undefined) {
      this.written.delete(key);
      this.accepted.delete(key);
      return 0;
    }
    this.written.set(key, writtenInTable);
    this.accepted.set(key, writtenInTable);
    return writtenInTable + 1;
  }

  /** Gives up `tp` (revoked or lost); whatever was buffered for it must be dropped. */
  revoke(tp: TopicPartition): void {
    const key = tpKey(tp);
    this.owned.delete(key);
    this.written.delete(key);
    this.accepted.delete(key);
  }

  /** True while this worker owns `tp`. */
  owns(tp: TopicPartition): boolean {
    return this.owned.has(tpKey(tp));
  }

  /**
   * Whether a fetched record should enter the batch: the partition is owned and the offset is
   * above everything accepted so far (re-deliveries after a seek are skipped). Accepting
   * advances the in-session high mark.
   */
  accept(tp: TopicPartition, offset: number): boolean {
    const key = tpKey(tp);
    if (!this.owned.has(key)) return false;
    const last = this.accepted.get(key);
    if (last !== undefined && offset <= last) return false;
    this.accepted.set(key, offset);
    return true;
  }

  /** Last offset written to the table for `tp`, if any. */
  writtenOffset(tp: TopicPartition): number | undefined {
    return this.written.get(tpKey(tp));
  }

  /** Records a successful commit whose txn actions carried these last offsets. */
  markWritten(lastOffsets: ReadonlyMap<string, { tp: TopicPartition; offset: number }>): void {
    for (const { tp, offset } of lastOffsets.values()) {
      if (this.owned.has(tpKey(tp))) this.written.set(tpKey(tp), offset);
    }
  }
}

/** The last offset per topic-partition among `records`, keyed by {@link tpKey}. */
export function lastOffsets<R extends { topic: string; partition: number; offset: number }>(
  records: readonly R[],
): Map<string, { tp: TopicPartition; offset: number }> {
  const out = new Map<string, { tp: TopicPartition; offset: number }>();
  for (const r of records) {
    const key = tpKey(r);
    const cur = out.get(key);
    if (!cur || r.offset > cur.offset) out.set(key, { tp: { topic: r.topic, partition: r.partition }, offset: r.offset });
  }
  return out;
}
