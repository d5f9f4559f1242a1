import { queryError } from '../errors';

/**
 * Caps queries running at once. Up to `maxQueued` more wait (at most `maxWaitMs`); beyond that a
 * request is refused at once with QUERY_SATURATED, so overload turns into quick 503s with
 * Retry-After instead of an ever-growing queue.
 */
export class Limiter {
  private running = 0;
  private readonly waiting: { start: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(
    private readonly maxConcurrent: number,
    private readonly maxQueued: number,
    private readonly maxWaitMs: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  get inFlight(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  private acquire(): Promise<void> {
    if (this.running < this.maxConcurrent) {
      this.running++;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.maxQueued) {
      return Promise.reject(saturated(this.maxConcurrent, this.maxQueued));
    }
    return new Promise((resolve, reject) => {
      const entry = {
        start: () => {
          clearTimeout(entry.timer);
          resolve();
        },
        timer: setTimeout(() => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(saturated(this.maxConcurrent, this.maxQueued));
        }, this.maxWaitMs),
      };
      this.waiting.push(entry);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter, so `running` stays the same.
    if (next) next.start();
    else this.running--;
  }
}

function saturated(maxConcurrent: number, maxQueued: number) {
  return queryError('QUERY_SATURATED', `${maxConcurrent} running and ${maxQueued} waiting`, { retryAfterSeconds: 1 });
}
