import { digestOf, DigestSet, newDigest } from './digest-set';

/** Something with an identity and an event time. */
export interface DedupKey {
  readonly eventId: string;
  /** Event time, ms since epoch. */
  readonly eventTimeMs: number;
  /** A DLQ replay: when older than the watermark it is `unsure` rather than kept unchecked. */
  readonly replayed?: boolean;
}

/** How a batch splits against the window; `late` and `unsure` records are also in `keep`. */
export interface DedupCheck<R> {
  readonly keep: R[];
  readonly duplicates: R[];
  /**
   * Event time before the watermark horizon: kept, and unchecked unless a replay (at-least-once
   * there: a producer retry long after the first send).
   */
  readonly late: R[];
  /**
   * Inside the watermark but older than what memory holds, or a DLQ replay before the horizon
   * (replays come after a fix, hours or days later, and may be run twice): the caller must look
   * them up in bronze.
   */
  readonly unsure: R[];
}

export interface DedupWindowOptions {
  /**
   * Event-time width of one set of ids (default 5 s); memory is given back a whole slice at a
   * time, so a slice should hold far fewer ids than `maxIds`.
   */
  readonly sliceMs?: number;
  /**
   * Most ids held (soft: the newest slice is never dropped). Above it the oldest slices go, and
   * ids older than what is left become `unsure`. Unbounded without it.
   */
  readonly maxIds?: number;
  /** Wall clock, ms since epoch (default `Date.now`): the window's edge never passes it. */
  readonly now?: () => number;
}

/**
 * Which event_ids of ONE topic-partition are already in bronze, for event times within
 * `watermarkMs` of the newest event time seen. All copies of an event share its entity key, so
 * they share a partition: the state is per partition and moves with it on a rebalance.
 *
 * Ids are held as 128-bit digests in per-`sliceMs` sets keyed by event time, so expiry drops
 * whole sets. Memory ≈ ids held × 25–50 bytes (digest-set.ts on why a digest stands for the id).
 * With `maxIds`, memory holds only the newest part of the watermark (`memoryFromMs` on): the
 * rest is answered by bronze, through the caller, for the few records that fall there.
 *
 * The state only ever holds ids that are COMMITTED to bronze: `check` does not record anything;
 * the caller records a batch with `remember` after its commit succeeded. A failed commit retried
 * with the same records therefore gets the same verdicts.
 */
export class DedupWindow {
  private readonly slices = new Map<number, DigestSet>();
  private readonly scratch = newDigest();
  private readonly sliceMs: number;
  private maxIds: number;
  private maxEventTimeMs = -Infinity;
  private entries = 0;
  private memoryFrom = -Infinity;
  private readonly now: () => number;

  constructor(
    private readonly watermarkMs: number,
    options: DedupWindowOptions = {},
  ) {
    this.sliceMs = options.sliceMs ?? 5_000;
    this.maxIds = options.maxIds ?? Infinity;
    this.now = options.now ?? Date.now;
  }

  /** Ids held. */
  get size(): number {
    return this.entries;
  }

  /** Oldest event time still covered, ms (−Infinity before the first event). */
  get horizonMs(): number {
    return this.maxEventTimeMs - this.watermarkMs;
  }

  /** Memory holds every committed id with an event time at or after this (−Infinity: all of the watermark). */
  get memoryFromMs(): number {
    return this.memoryFrom;
  }

  /** A new bound on the ids held (a rebalance changed this process's share); drops slices at once if over. */
  setMaxIds(maxIds: number): void {
    this.maxIds = maxIds;
    this.trim();
  }

  /**
   * Splits `records` into those to write and those to drop, without changing the state.
   * A record is dropped when its id is already committed, or repeated earlier in `records`.
   */
  check<R extends DedupKey>(records: readonly R[]): DedupCheck<R> {
    const out: DedupCheck<R> = { keep: [], duplicates: [], late: [], unsure: [] };
    const inBatch = new Set<string>();
    const horizon = this.horizonMs;
    for (const r of records) {
      if (inBatch.has(r.eventId)) {
        out.duplicates.push(r);
        continue;
      }
      const late = r.eventTimeMs < horizon;
      if (r.eventTimeMs >= this.memoryFrom && this.has(r.eventId, r.eventTimeMs)) {
        out.duplicates.push(r);
        continue;
      }
      if (late ? r.replayed === true : r.eventTimeMs < this.memoryFrom) out.unsure.push(r);
      inBatch.add(r.eventId);
      if (late) out.late.push(r);
      out.keep.push(r);
    }
    return out;
  }

  /**
   * Records committed events, then drops slices that fell behind the watermark or over `maxIds`.
   * The window's edge follows the newest event time up to the wall clock, no further: one event
   * dated years ahead (a foreign writer, a producer's broken clock) moved it there, and every real
   * event after it fell behind the horizon, kept unchecked, duplicates and all, for good (the
   * window is rebuilt from bronze's newest times after a restart). Future events are still held
   * and found; they only do not move the edge past now.
   */
  remember(records: Iterable<DedupKey>): void {
    const now = this.now();
    for (const r of records) {
      const edge = Math.min(r.eventTimeMs, now);
      if (edge > this.maxEventTimeMs) this.maxEventTimeMs = edge;
      // Older than memory holds: bronze answers for it (the commit just put it there).
      if (r.eventTimeMs < this.memoryFrom) continue;
      const slice = this.sliceOf(r.eventTimeMs);
      let set = this.slices.get(slice);
      if (!set) this.slices.set(slice, (set = new DigestSet()));
      if (set.add(digestOf(r.eventId, this.scratch))) this.entries += 1;
    }
    this.expire();
    this.trim();
  }

  /**
   * Fills an empty window from bronze. `truncated`: `records` are only the newest ids (newest
   * first or in any order), so memory covers event times above the oldest of them; ids at that
   * very time may be missing and are left to bronze too.
   */
  load(records: readonly DedupKey[], truncated: boolean): void {
    if (truncated && records.length > 0) {
      let oldest = Infinity;
      for (const r of records) oldest = Math.min(oldest, r.eventTimeMs);
      this.memoryFrom = Math.max(this.memoryFrom, oldest + 1);
    }
    this.remember(records);
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

  /** Over `maxIds`: drops the oldest slices (never the newest) and moves `memoryFrom` past them. */
  private trim(): void {
    while (this.entries > this.maxIds && this.slices.size > 1) {
      let oldest = Infinity;
      for (const slice of this.slices.keys()) if (slice < oldest) oldest = slice;
      this.entries -= (this.slices.get(oldest) as DigestSet).size;
      this.slices.delete(oldest);
      this.memoryFrom = Math.max(this.memoryFrom, (oldest + 1) * this.sliceMs);
    }
  }
}
