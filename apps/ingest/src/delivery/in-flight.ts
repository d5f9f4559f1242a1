/**
 * Counts the request bytes ingest holds at once (read, parsed, or waiting for Kafka). A request
 * reserves its declared size before its body is read, so memory stays bounded whatever the
 * clients do; a request that would pass the budget is answered 429 instead of buffered.
 */
export class InFlightBudget {
  private used = 0;

  constructor(readonly limitBytes: number) {}

  /** Reserves `bytes`; false when that would pass the limit (a single request may always run alone). */
  tryAcquire(bytes: number): boolean {
    if (this.used > 0 && this.used + bytes > this.limitBytes) return false;
    this.used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  get inUse(): number {
    return this.used;
  }
}
