/**
 * Recent tombstones of one contract: entity key → highest deleted version, for deletes already
 * folded into silver. Copy-on-write MERGE removes a deleted row, so without this an older
 * version arriving after the tombstone (out of order, across two fold steps) would re-insert the
 * entity. A tombstone is held while its event time is within the watermark of the newest event
 * folded from its Kafka partition (an entity's events all travel in one partition): one horizon
 * for the whole contract let a partition ahead in event time (a lagging consumer, a catch-up,
 * a producer's clock) expire another partition's deletes in the step that folded them. Rebuilt
 * from bronze on start. Beyond the watermark such a late, older version is applied (documented
 * limit).
 */
export class TombstoneMemory {
  private readonly byKey = new Map<string, { version: number; eventTimeMs: number; partition: number }>();
  /** Per Kafka partition: the newest event time folded from it. */
  private readonly newest = new Map<number, number>();

  constructor(
    private readonly watermarkMs: number,
    /** Wall clock, ms since epoch: a partition's newest time never passes it. */
    private readonly now: () => number = Date.now,
  ) {}

  /** Keys held. */
  get size(): number {
    return this.byKey.size;
  }

  /** The newest event time folded from `partition` that this memory knows of; -Infinity when none. */
  newestOf(partition: number): number {
    return this.newest.get(partition) ?? -Infinity;
  }

  /**
   * Records that an event of `partition` with this time was folded (a delete or not). Up to the
   * wall clock: one event dated years ahead expired every tombstone of its partition, and an
   * older version folded after a delete brought the entity back.
   */
  observe(partition: number, eventTimeMs: number): void {
    const t = Math.min(eventTimeMs, this.now());
    if (t > (this.newest.get(partition) ?? -Infinity)) this.newest.set(partition, t);
  }

  /** Records a folded delete (and observes its time). */
  remember(key: string, version: number, eventTimeMs: number, partition: number): void {
    const cur = this.byKey.get(key);
    if (!cur || version > cur.version) this.byKey.set(key, { version, eventTimeMs, partition });
    this.observe(partition, eventTimeMs);
  }

  /** True when a folded delete of `key` has a version at or above `version`. */
  supersedes(key: string, version: number): boolean {
    const cur = this.byKey.get(key);
    return cur !== undefined && cur.version >= version;
  }

  /** Forgets tombstones older than the watermark of their partition's newest folded event. */
  expire(): void {
    for (const [k, v] of this.byKey) {
      if (v.eventTimeMs < (this.newest.get(v.partition) ?? -Infinity) - this.watermarkMs) this.byKey.delete(k);
    }
  }
}
