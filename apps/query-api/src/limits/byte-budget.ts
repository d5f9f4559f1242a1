import { queryError } from '../errors';

/**
 * Bytes of data files that the reads of one table may hold at once. Over S3, a read's files are
 * pinned in the table's bounded file cache until it ends, up to a hard bound; reads that together
 * passed it lost their oldest files to eviction and failed as if the files had been vacuumed.
 * A read waits here, in arrival order, until its bytes fit beside those of the reads running; one
 * that does not get its turn within its wait answers QUERY_SATURATED (503, retry). Files shared
 * by reads are counted once per read: the bound is conservative.
 */
export class ByteBudget {
  private held = 0;
  private readonly waiting: { bytes: number; start: () => void }[] = [];

  constructor(readonly limit: number) {}

  /** Bytes the running reads hold. */
  get heldBytes(): number {
    return this.held;
  }

  /**
   * Holds `bytes` (at most the limit) once they fit, waiting at most `waitMs`; resolves to the
   * function that gives them back (idempotent).
   */
  acquire(bytes: number, waitMs: number): Promise<() => void> {
    if (bytes > this.limit) throw new RangeError(`a read of ${bytes} bytes can never fit a budget of ${this.limit}`);
    if (bytes === 0) return Promise.resolve(() => undefined); // reads no file: nothing to wait for
    if (this.waiting.length === 0 && this.held + bytes <= this.limit) return Promise.resolve(this.hold(bytes));
    return new Promise((resolve, reject) => {
      const entry = {
        bytes,
        start: () => {
          clearTimeout(timer);
          resolve(this.hold(bytes));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(entry), 1);
        this.startWaiting(); // the reads behind it may fit now
        reject(queryError('QUERY_SATURATED', `the reads of this table hold ${this.held} of ${this.limit} bytes of files; this one (${bytes}) did not fit within ${waitMs} ms`, { retryAfterSeconds: 1 }));
      }, waitMs);
      this.waiting.push(entry);
    });
  }

  private hold(bytes: number): () => void {
    this.held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
      this.startWaiting();
    };
  }

  /** Starts waiting reads, first come first served, while the first one fits. */
  private startWaiting(): void {
    while (this.waiting.length > 0 && this.held + this.waiting[0].bytes <= this.limit) this.waiting.shift()!.start();
  }
}
