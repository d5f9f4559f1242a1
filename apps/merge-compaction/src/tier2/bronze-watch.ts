import type { Logger } from '@sluice/telemetry';
import { Periodic } from '../flow/periodic';
import type { TableSet } from '../tables/table-set';

/** What a {@link BronzeWatch} watches and whom it tells. */
export interface BronzeWatchOptions {
  readonly tables: TableSet;
  /** Bronze table names (unprefixed, as contracts name them). */
  readonly bronzeTables: readonly string[];
  /** How often each table is looked at, ms. */
  readonly intervalMs: number;
  /** Called when some table has a commit the watch had not seen. */
  readonly onCommit: () => void;
  readonly logger: Logger;
  /** Longest back-off of the watch's job (its looks do not throw; as the other jobs). */
  readonly retryMaxMs: number;
}

/**
 * Every this many looks a table's version is read from its log instead of a HEAD of the next
 * one, so a table created again at fewer versions (or a gap the watch missed while failing) is
 * followed again.
 */
export const RESYNC_LOOKS = 40;

/**
 * Tells tier 2 as soon as tier 1 in another process commits to a bronze table, instead of at
 * the next fold interval (the split deployment: tier 1 in its own pods). One HEAD of each bronze
 * table's next log version per interval, where a fold pass would read the log of every table it
 * folds. Only an accelerator: the fold cadence goes on without it. A table that cannot be looked
 * at is logged (a warning when it starts failing) and holds back no other.
 */
export class BronzeWatch {
  /** Per table, the latest version this watch has seen. */
  private readonly seen = new Map<string, number>();
  /** Tables whose last look failed (one warning per streak). */
  private readonly failing = new Set<string>();
  private looks = 0;
  private readonly job: Periodic;

  constructor(private readonly o: BronzeWatchOptions) {
    const look = async (signal: AbortSignal) => {
      await this.check(signal);
      return false; // a look that found a commit does not look again at once: the fold it woke reads the log
    };
    this.job = new Periodic('bronze watch', o.intervalMs, look, o.logger, o.retryMaxMs);
  }

  /** Looks now, then every interval. */
  start(): void {
    this.job.start();
  }

  /** Stops after the look under way, which then tells no one. */
  stop(): Promise<void> {
    return this.job.stop();
  }

  /**
   * Looks at every bronze table once; true (and `onCommit` called, unless `signal` was aborted
   * meanwhile) when one has a new commit.
   */
  async check(signal?: AbortSignal): Promise<boolean> {
    const resync = ++this.looks % RESYNC_LOOKS === 0;
    let moved = false;
    for (const name of this.o.bronzeTables) {
      try {
        moved = (await this.look(name, resync)) || moved;
        if (this.failing.delete(name)) this.o.logger.info({ table: name }, 'bronze watch: the table can be looked at again');
      } catch (err) {
        if (!this.failing.has(name)) this.o.logger.warn({ err, table: name }, 'bronze watch: cannot look at the table; its folds wait for the fold cadence');
        this.failing.add(name);
      }
    }
    if (moved && !signal?.aborted) this.o.onCommit();
    return moved;
  }

  /** True when `name` has a version this watch had not seen. */
  private async look(name: string, resync: boolean): Promise<boolean> {
    const table = await this.o.tables.existing(name);
    if (table === undefined) return false;
    const seen = this.seen.get(name);
    // A new version found: the log says how far it goes (several commits since the last look, or
    // old commit files cleaned up, would leave a HEAD of seen + 1 behind or missing for good).
    if (seen === undefined || resync || (await table.hasVersionAfter(seen))) {
      const version = (await table.snapshot()).version;
      this.seen.set(name, version);
      return seen !== undefined && version !== seen;
    }
    return false;
  }
}
