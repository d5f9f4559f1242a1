/** Bounds of one tier-1 micro-batch. A batch closes on whichever bound it reaches first. */
export interface BatchBounds {
  /** Age of the oldest record in the batch, ms. */
  readonly maxMs: number;
  /** Sum of record sizes, bytes. */
  readonly maxBytes: number;
  /** Number of records. */
  readonly maxRecords: number;
}

/** Why a batch was closed (a log/metric label). */
export type CloseReason = 'time' | 'bytes' | 'records' | 'flush';

/** A closed batch. */
export interface Batch<T> {
  readonly records: T[];
  readonly bytes: number;
  /** When its first record was added, ms (the batcher's clock). */
  readonly openedAt: number;
  readonly reason: CloseReason;
}

/**
 * Accumulates records into micro-batches bounded by time, bytes and count. Pure bookkeeping with
 * an injected clock: the caller polls `due()` and `take()`, so there are no timers to leak and
 * tests control time. Records may keep arriving past the bounds (while the previous batch is
 * being written); `take()` still hands out at most one bounded batch and keeps the rest.
 */
export class MicroBatcher<T> {
  private records: T[] = [];
  /** Size of each held record, bytes (same order as `records`). */
  private sizes: number[] = [];
  private bytes = 0;
  private openedAt = 0;

  constructor(
    private readonly bounds: BatchBounds,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds one record of `bytes` size. Returns true when the batch reached a size bound. */
  add(record: T, bytes: number): boolean {
    if (this.records.length === 0) this.openedAt = this.now();
    this.records.push(record);
    this.sizes.push(bytes);
    this.bytes += bytes;
    return this.sizeReason() !== undefined;
  }

  /** Calls `visit` with each record held, oldest first. */
  forEach(visit: (record: T) => void): void {
    for (const r of this.records) visit(r);
  }

  /** Records held. */
  get size(): number {
    return this.records.length;
  }

  /** Bytes held. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Ms until the time bound closes the open batch; Infinity when empty. */
  msUntilDue(): number {
    if (this.records.length === 0) return Infinity;
    return Math.max(0, this.openedAt + this.bounds.maxMs - this.now());
  }

  /** Why the open batch should close now, or undefined when it should keep filling. */
  due(): CloseReason | undefined {
    if (this.records.length === 0) return undefined;
    return this.sizeReason() ?? (this.msUntilDue() === 0 ? 'time' : undefined);
  }

  /**
   * Closes and returns the open batch (reason `flush` unless a bound was hit), or undefined when
   * empty. The batch is the oldest records up to the bounds: at most `maxRecords`, and records
   * until their bytes reach `maxBytes` (at least one). What is left stays, in order, as the next
   * batch, which keeps the same opening time (its records are no younger).
   */
  take(): Batch<T> | undefined {
    if (this.records.length === 0) return undefined;
    const reason = this.due() ?? 'flush';
    const { n, bytes } = batchPrefix(this.records.length, (i) => this.sizes[i], this.bounds);
    const batch: Batch<T> = { records: n === this.records.length ? this.records : this.records.slice(0, n), bytes, openedAt: this.openedAt, reason };
    this.records = n === this.records.length ? [] : this.records.slice(n);
    this.sizes = this.records.length === 0 ? [] : this.sizes.slice(n);
    this.bytes -= bytes;
    return batch;
  }

  /** Drops everything held (after a rebalance revoked the partitions the records came from). */
  clear(): void {
    this.records = [];
    this.sizes = [];
    this.bytes = 0;
  }

  /** Keeps only records for which `keep` is true (e.g. of partitions still assigned). */
  retain(keep: (record: T) => boolean): void {
    const records: T[] = [];
    const sizes: number[] = [];
    for (let i = 0; i < this.records.length; i++) {
      if (!keep(this.records[i])) continue;
      records.push(this.records[i]);
      sizes.push(this.sizes[i]);
    }
    this.records = records;
    this.sizes = sizes;
    this.bytes = sizes.reduce((sum, b) => sum + b, 0);
  }

  private sizeReason(): CloseReason | undefined {
    if (this.bytes >= this.bounds.maxBytes) return 'bytes';
    if (this.records.length >= this.bounds.maxRecords) return 'records';
    return undefined;
  }
}

/**
 * How many of `count` records in order (sizes by `sizeAt`) make one bounded batch: at most
 * `maxRecords`, and records until their bytes reach `maxBytes` (at least one).
 */
export function batchPrefix(count: number, sizeAt: (i: number) => number, bounds: BatchBounds): { n: number; bytes: number } {
  const limit = Math.min(count, bounds.maxRecords);
  let n = 0;
  let bytes = 0;
  while (n < limit && (n === 0 || bytes < bounds.maxBytes)) bytes += sizeAt(n++);
  return { n, bytes };
}

/**
 * `groups` (a contract's waiting records each), in order, cut into turns whose batches (the
 * {@link batchPrefix} of each group) together stay within `bounds`; a group over them alone is a
 * turn of its own. What may be staged at once when each group of a turn is written at once.
 */
export function inTurns<G>(groups: readonly G[], countOf: (group: G) => number, sizeAt: (group: G, i: number) => number, bounds: BatchBounds): G[][] {
  const turns: G[][] = [];
  let records = 0;
  let bytes = 0;
  for (const group of groups) {
    const batch = batchPrefix(countOf(group), (i) => sizeAt(group, i), bounds);
    const turn = turns.at(-1);
    if (turn !== undefined && records + batch.n <= bounds.maxRecords && bytes + batch.bytes <= bounds.maxBytes) {
      turn.push(group);
    } else {
      turns.push([group]);
      records = 0;
      bytes = 0;
    }
    records += batch.n;
    bytes += batch.bytes;
  }
  return turns;
}
