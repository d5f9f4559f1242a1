import { deadLetterRecord, recordBytes } from '@sluice/contracts';
import type { Issue } from '@sluice/errors';
import type { ConsumedMessage, PartitionRef, ProducerRecord } from '@sluice/kafka';

/** Writes DLQ records and resolves once Kafka has them all (a libs/kafka producer's sendBatch). */
export type DeadLetterSink = (records: readonly ProducerRecord[]) => Promise<unknown>;

/**
 * Valid-topic records tier 1 cannot put into bronze (no value, not decodable, another contract's
 * schema), on their way to the DLQ topic. A DLQ record is the original record — key, value bytes,
 * headers — plus the `sluice-dlq-*` headers validate writes too, so the DLQ tool lists, shows and
 * replays them like validate's. Tier 1 flushes before every bronze commit, so a commit never
 * covers the offset of a record the DLQ does not have yet: nothing is lost. A crash between the
 * flush and the commit re-reads the record and writes it again, so these are at least once;
 * copies share their `sluice-dlq-source-*` coordinates.
 */
/** What one DLQ record was written for (for the metrics, counted once Kafka has it). */
export interface DeadLetterWritten {
  readonly reason: string;
  readonly contract: string;
}

export class DeadLetters {
  private queued: { record: ProducerRecord; bytes: number; written: DeadLetterWritten; source: PartitionRef }[] = [];
  /** Bytes (key, value, headers) of the queued records and of those being flushed: all are held in memory. */
  private held = 0;

  constructor(
    private readonly sink: DeadLetterSink,
    private readonly topic: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** Records waiting for {@link flush}. */
  get size(): number {
    return this.queued.length;
  }

  /** Bytes held until Kafka has them (queued or being flushed); tier 1's backpressure counts them. */
  get heldBytes(): number {
    return this.held;
  }

  /** Queues `message` with the first issue's code as its reason; returns the reason. */
  add(message: ConsumedMessage, contract: string, issues: readonly Issue[]): string {
    const reason = issues[0]?.code ?? 'MERGE_RECORD_UNDECODABLE';
    const record = deadLetterRecord(message, { reason, issues, source: message, contract, now: this.now() });
    const bytes = recordBytes(record);
    this.queued.push({ record: { topic: this.topic, ...record }, bytes, written: { reason, contract }, source: { topic: message.topic, partition: message.partition } });
    this.held += bytes;
    return reason;
  }

  /**
   * Drops the queued records read from a partition `owned` refuses (not those of a flush under
   * way: the caller has none then). For a revoked partition: no bronze commit covers their
   * offsets yet (a commit waits for the flush before it), so its next owner reads them again and
   * queues them anew; kept, they went to the DLQ twice when the partition came back to this
   * worker or went to another. Returns how many were dropped.
   */
  dropUnless(owned: (source: PartitionRef) => boolean): number {
    const kept: typeof this.queued = [];
    for (const q of this.queued) {
      if (owned(q.source)) kept.push(q);
      else this.held -= q.bytes;
    }
    const dropped = this.queued.length - kept.length;
    this.queued = kept;
    return dropped;
  }

  /**
   * Writes every queued record and returns what they were written for; on failure they stay
   * queued (and the error is thrown) for a retry.
   */
  async flush(): Promise<DeadLetterWritten[]> {
    if (this.queued.length === 0) return [];
    const batch = this.queued;
    this.queued = [];
    try {
      await this.sink(batch.map((q) => q.record));
      for (const q of batch) this.held -= q.bytes;
      return batch.map((q) => q.written);
    } catch (err) {
      this.queued = [...batch, ...this.queued];
      throw err;
    }
  }
}


