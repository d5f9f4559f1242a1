import { digestOf, DigestSet, newDigest } from './digest-set';

/** Verdict on one event against the dedup state. */
export type DedupVerdict = 'new' | 'duplicate' | 'late';

/** Something with an identity and an event time. */
export interface DedupKey {
  readonly eventId: string;
  /** Event time, ms since epoch. */
  readonly eventTimeMs: number;
}

/**
 * Which event_ids of ONE topic-partition are already in bronze, for event times within
 * `watermarkMs` of the newest event time seen. All copies of an event share its entity key, so
 * they share a partition: the state is per partition and moves with it on a rebalance.
 *
 * Ids are held as 128-bit digests in per-`sliceMs` sets keyed by event time, so expiry drops
 * whole sets. Memory ≈ (events per second of event time) × watermark × 23–46 bytes (digest-set.ts
 * on why a digest stands for the id).
 *
 * The state only ever holds ids that are COMMITTED to bronze: `check` does not record anything;
 * the caller records a batch with `remember` after its commit succeeded. A failed commit retried
 * with the same records therefore gets the same verdicts.
 */
export class DedupWindow {
  private readonly slices = new Map<number, DigestSet>();
  private readonly scratch = newDigest();
  private maxEventTimeMs = -Infinity;
  private entries = 0;

  constructor(
    private readonly watermarkMs: number,
    private readonly sliceMs = 60_000,
  ) {}

  /** Ids held. */
  get size(): number {
    return this.entries;
  }

  /** Oldest event time still covered, ms (−Infinity before the first event). */
  get horizonMs(): number {
    return this.maxEventTimeMs - this.watermarkMs;
  }

  /**
   * Splits `records` into those to write and those to drop, without changing the state.
   * A record is dropped when its id is already committed, or repeated earlier in `records`.
   * `late` records (event time before the horizon) are kept: the in-memory window cannot tell;
   * the caller may check them against bronze.
   */
  check<R extends DedupKey>(records: readonly R[]): { keep: R[]; duplicates: R[]; late: R[] } {
    const keep: R[] = [];
    const duplicates: R[] = [];
    const late: R[] = [];
    const inBatch = new Set<string>();
    const horizon = this.horizonMs;
    for (const r of records) {
      if (inBatch.has(r.eventId) || this.has(r.eventId, r.eventTimeMs)) {
        duplicates.push(r);
        continue;
      }
      inBatch.add(r.eventId);
      if (r.eventTimeMs < horizon) late.push(r);
      keep.push(r);
    }
    return { keep, duplicates, late };
  }

  /** Records committed events, then drops slices that fell behind the watermark. */
  remember(records: Iterable<DedupKey>): void {
    for (const r of records) {
      if (r.eventTimeMs > this.maxEventTimeMs) this.maxEventTimeMs = r.eventTimeMs;
      const slice = this.sliceOf(r.eventTimeMs);
      let set = this.slices.get(slice);
      if (!set) this.slices.set(slice, (set = new DigestSet()));
      if (set.add(digestOf(r.eventId, this.scratch))) this.entries += 1;
    }
    this.expire();
  }

  /** True when `eventId` with that event time is held. */
  has(eventId: string, eventTimeMs: number): boolean {
    const set = this.slices.get(this.sliceOf(eventTimeMs));
    return set !== undefined && set.has(digestOf(eventId, this.scratch));
  }

  private sliceOf(eventTimeMs: number): number {
    return Math.floor(eventTimeMs / this.sliceMs);
  }

  private expire(): void {
    // A slice is dropped only when all of it is older than the horizon.
    const lastDroppable = Math.floor(this.horizonMs / this.sliceMs) - 1;
    for (const [slice, set] of this.slices) {
      if (slice <= lastDroppable) {
        this.entries -= set.size;
        this.slices.delete(slice);
      }
    }
  }
}
