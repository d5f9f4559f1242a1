/** Exponential backoff with full jitter, capped: delay n = random(0.5..1) × min(max, base × 2^n). */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Failures since the last success. */
  get failures(): number {
    return this.attempt;
  }

  /** Delay before the next retry, ms; counts one more failure. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt += 1;
    // Half-jitter: never retry immediately, never all workers in lock-step.
    return Math.round(ceiling * (0.5 + 0.5 * this.random()));
  }

  /** Forgets past failures. */
  reset(): void {
    this.attempt = 0;
  }
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
