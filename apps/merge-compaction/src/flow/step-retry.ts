import { Backoff } from './backoff';

/**
 * The back-off of one step among several that a periodic job runs in turn (tier 2's silver and
 * each gold aggregate per contract, its maintenance): a step that keeps failing waits out its own back-off
 * while the others go on at the job's cadence.
 */
export class StepRetry {
  private readonly backoff: Backoff;
  private retryAt = 0;
  private failingSince: number | undefined;

  constructor(
    /** Names the step in logs, e.g. `silver orders`. */
    readonly name: string,
    retryMaxMs: number,
  ) {
    this.backoff = new Backoff(100, retryMaxMs);
  }

  /** Whether the step may run at `nowMs` (its back-off, if any, is over). */
  due(nowMs: number): boolean {
    return nowMs >= this.retryAt;
  }

  /** Failures since the last success. */
  get failures(): number {
    return this.backoff.failures;
  }

  /** How long the step has been failing at `nowMs`; 0 when its last run succeeded. */
  failingForMs(nowMs: number): number {
    return this.failingSince === undefined ? 0 : nowMs - this.failingSince;
  }

  succeeded(): void {
    this.backoff.reset();
    this.retryAt = 0;
    this.failingSince = undefined;
  }

  /** Records a failure at `nowMs`; returns the back-off before the next run, ms. */
  failed(nowMs: number): number {
    const delay = this.backoff.next();
    this.retryAt = nowMs + delay;
    this.failingSince ??= nowMs;
    return delay;
  }
}
