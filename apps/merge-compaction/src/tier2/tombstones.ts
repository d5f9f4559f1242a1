/**
 * Recent tombstones of one contract: entity key → highest deleted version, for deletes already
 * folded into silver. Copy-on-write MERGE removes a deleted row, so without this an older
 * version arriving after the tombstone (out of order, across two fold steps) would re-insert the
 * entity. Held for event times within the watermark of the newest tombstone; rebuilt from bronze
 * on start. Beyond the watermark such a late, older version is applied (documented limit).
 */
export class TombstoneMemory {
  private readonly byKey = new Map<string, { version: number; eventTimeMs: number }>();
  private newest = -Infinity;

  constructor(private readonly watermarkMs: number) {}

  /** Keys held. */
  get size(): number {
    return this.byKey.size;
  }

  /** Records folded deletes. */
  remember(key: string, version: number, eventTimeMs: number): void {
    const cur = this.byKey.get(key);
    if (!cur || version > cur.version) this.byKey.set(key, { version, eventTimeMs });
    if (eventTimeMs > this.newest) this.newest = eventTimeMs;
  }

  /** True when a folded delete of `key` has a version at or above `version`. */
  supersedes(key: string, version: number): boolean {
    const cur = this.byKey.get(key);
    return cur !== undefined && cur.version >= version;
  }

  /** Forgets tombstones older than the watermark. */
  expire(): void {
    const horizon = this.newest - this.watermarkMs;
    for (const [k, v] of this.byKey) if (v.eventTimeMs < horizon) this.byKey.delete(k);
  }
}
