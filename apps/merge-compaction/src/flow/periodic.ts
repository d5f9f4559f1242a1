import type { Logger } from '@sluice/telemetry';
import { Backoff, sleep } from './backoff';

/**
 * Runs `tick` every `intervalMs` (again at once when it returns true: "more to do"), backing
 * off on errors, until stopped. Errors are logged, never thrown: a background job must not take
 * the process down (invariant 8).
 */
export class Periodic {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly backoff: Backoff;
  private lastOk = Date.now();
  /** Set by {@link wake}: run the next tick without waiting out the interval. */
  private woken = false;
  /** Ends the current interval wait early, while there is one. */
  private endWait: (() => void) | undefined;
  /** When the running tick started or last reported progress; undefined between ticks. */
  private tickStartedAt: number | undefined;
  /** Consecutive failed ticks. */
  failures = 0;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly tick: (signal: AbortSignal) => Promise<boolean>,
    private readonly logger: Logger,
    retryMaxMs: number,
  ) {
    this.backoff = new Backoff(Math.min(100, intervalMs), retryMaxMs);
  }

  /** ms since the last successful tick. */
  get sinceOkMs(): number {
    return Date.now() - this.lastOk;
  }

  /**
   * ms since the running tick started or last reported {@link progress}; 0 between ticks (a tick
   * stuck in a call that never returns grows it for good).
   */
  get tickRunningMs(): number {
    return this.tickStartedAt === undefined ? 0 : Date.now() - this.tickStartedAt;
  }

  /** The running tick did a unit of work (a partition compacted): its stall clock starts again. */
  progress(): void {
    if (this.tickStartedAt !== undefined) this.tickStartedAt = Date.now();
  }

  /** Starts the loop. */
  start(): void {
    this.loop ??= this.run();
  }

  /**
   * New work arrived (e.g. tier 1 committed to bronze in this process): tick now instead of at the
   * end of the interval; during a tick, run again as soon as it returns.
   */
  wake(): void {
    this.woken = true;
    this.endWait?.();
  }

  /** Stops after the running tick (which is never interrupted half-way: commits are atomic anyway). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.endWait?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.abort.signal.aborted) {
      let more = false;
      let retryInMs: number | undefined;
      this.woken = false;
      this.tickStartedAt = Date.now();
      try {
        more = await this.tick(this.abort.signal);
        this.failures = 0;
        this.lastOk = Date.now();
        this.backoff.reset();
      } catch (err) {
        this.failures += 1;
        retryInMs = this.backoff.next();
        this.logger.warn({ err, job: this.name, retryInMs, failures: this.failures }, `${this.name} failed; retrying`);
      } finally {
        this.tickStartedAt = undefined;
      }
      if (retryInMs !== undefined) await sleep(retryInMs, this.abort.signal);
      else if (!more && !this.woken) await this.waitInterval();
    }
  }

  /**
   * The interval, cut short by {@link wake} or stop. One controller of its own, which both end: a
   * signal combined with the job's (`AbortSignal.any`) per wait kept ~200 bytes each that were
   * never collected, and tier 2 waits at least once a second.
   */
  private waitInterval(): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    const wait = new AbortController();
    this.endWait = () => wait.abort();
    return sleep(this.intervalMs, wait.signal).finally(() => {
      this.endWait = undefined;
    });
  }
}
