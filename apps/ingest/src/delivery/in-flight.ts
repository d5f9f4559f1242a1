/**
 * Counts the request bytes ingest holds at once (read, parsed, or waiting for Kafka), in all and
 * per producer. A request reserves its declared size before its body is read, so memory stays
 * bounded whatever the clients do; a request that would pass a bound is answered 429 instead of
 * buffered. The per-producer bound keeps one API key, however many connections it opens, from
 * taking the whole budget and locking every other producer out.
 */
export class InFlightBudget {
  private used = 0;
  private readonly usedBy = new Map<string, number>();

  /** `producerLimitBytes`: what one producer may hold at once; default the whole limit (no per-producer bound). */
  constructor(
    readonly limitBytes: number,
    readonly producerLimitBytes: number = limitBytes,
  ) {}

  /**
   * Reserves `bytes` for `producer`; otherwise says which bound it would pass. A single request
   * may always run alone, in all and for its producer.
   */
  tryAcquire(bytes: number, producer: string): 'ok' | 'total' | 'producer' {
    const mine = this.usedBy.get(producer) ?? 0;
    if (this.used > 0 && this.used + bytes > this.limitBytes) return 'total';
    if (mine > 0 && mine + bytes > this.producerLimitBytes) return 'producer';
    this.used += bytes;
    this.usedBy.set(producer, mine + bytes);
    return 'ok';
  }

  release(bytes: number, producer: string): void {
    this.used = Math.max(0, this.used - bytes);
    const left = (this.usedBy.get(producer) ?? 0) - bytes;
    if (left > 0) this.usedBy.set(producer, left);
    else this.usedBy.delete(producer);
  }

  get inUse(): number {
    return this.used;
  }

  /** Bytes `producer` holds now. */
  inUseBy(producer: string): number {
    return this.usedBy.get(producer) ?? 0;
  }
}
