/**
 * Tells a slow step of a processing loop from a hung one, for liveness. The loop marks each step
 * (validate: connect, one batch's poll-produce-commit; merge-compaction: one poll with its
 * rebalance hooks) as it starts and ends; a step running longer than the limit is a call that
 * will not return (librdkafka can block a transactional or consumer call while its coordinator
 * is gone). Nothing inside the process can unblock it, so `/healthz` fails and the service exits
 * for its supervisor to start a fresh instance, which resumes from the durable offsets.
 */
export class StallWatch {
  private since: number | undefined;
  private step = '';

  constructor(
    /** Longest a step may run before it counts as hung, ms. */
    readonly limitMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A step begins (one at a time). */
  begin(step: string): void {
    this.since = this.now();
    this.step = step;
  }

  /** Names what the running step is doing now, without restarting its clock (for the report). */
  label(step: string): void {
    this.step = step;
  }

  /**
   * The running step moved on to `step` (a call returned, even with an error): its clock restarts,
   * so a step made of several bounded calls is judged call by call. No-op between steps.
   */
  progress(step: string): void {
    if (this.since === undefined) return;
    this.begin(step);
  }

  /** The step returned, whether it succeeded or failed. */
  end(): void {
    this.since = undefined;
  }

  /** The running step and how long it has run, or undefined between steps. */
  running(): { step: string; forMs: number } | undefined {
    return this.since === undefined ? undefined : { step: this.step, forMs: this.now() - this.since };
  }

  /** False once the running step has outlived the limit. */
  live(): boolean {
    const r = this.running();
    return r === undefined || r.forMs <= this.limitMs;
  }
}
