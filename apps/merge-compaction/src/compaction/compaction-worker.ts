import type { AnyContract } from '@sluice/contracts';
import type { SortKey } from '@sluice/lake';
import type { Logger } from '@sluice/telemetry';
import { Periodic } from '../flow/periodic';
import { KAFKA_PARTITION, KAFKA_OFFSET } from '../tables/layout';
import type { TableSet } from '../tables/table-set';
import { maintainTable, type MaintenanceOptions } from './maintenance';

/** Options of {@link CompactionWorker}. */
export interface CompactionOptions {
  readonly contracts: readonly AnyContract[];
  readonly tables: TableSet;
  readonly intervalMs: number;
  readonly retryMaxMs: number;
  /** A pass without progress (a file written, a partition compacted) for longer than this is hung: {@link CompactionWorker.live} turns false. */
  readonly stallTimeoutMs: number;
  readonly maintenance: MaintenanceOptions;
  /** Also vacuum silver and gold (their compaction runs in tier 2). */
  readonly vacuumDerived: boolean;
  /**
   * Vacuum a table at most this often (0: every pass): a vacuum lists every data file of the
   * table, and with a retention of days a pass a minute only lists them again.
   */
  readonly vacuumIntervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

/**
 * The compaction role: bin-packs bronze's small files per (event_date, bucket) partition, sorted
 * by Kafka coordinates so tier 2's offset ranges keep skipping files, and vacuums every table.
 * Bronze compaction never conflicts with tier 1 (blind appends, DELTA.md §6); silver and gold
 * are compacted by tier 2 itself, so this job never races a MERGE.
 */
export class CompactionWorker {
  private readonly job: Periodic;
  /** Counters tests read. */
  readonly stats = { passes: 0, filesRemoved: 0, conflicts: 0, filesVacuumed: 0 };

  /** The options' maintenance, reporting each partition to the job: a long pass over a backlog is progress, not a hang. */
  private readonly maintenance: MaintenanceOptions;
  /** When each table's last vacuum finished, by table name. */
  private readonly vacuumedAt = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly o: CompactionOptions) {
    this.job = new Periodic('compaction', o.intervalMs, () => this.tick(), o.logger, o.retryMaxMs);
    this.maintenance = { ...o.maintenance, onProgress: () => this.job.progress() };
    this.now = o.now ?? Date.now;
  }

  /** False while a pass has gone longer than the stall timeout without compacting a partition (a storage call that never returns). */
  get live(): boolean {
    return this.job.tickRunningMs < this.o.stallTimeoutMs;
  }

  /** How long the running pass has gone without progress (0 between passes), for the stall report. */
  get sinceProgressMs(): number {
    return this.job.tickRunningMs;
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /**
   * One pass over every table. A table that fails is passed over for this pass, not allowed to
   * stop the others (the tables after it were never compacted or vacuumed while it failed); the
   * first failure is thrown once all ran, for the job's back-off and report.
   */
  async tick(): Promise<boolean> {
    let failed: unknown;
    const maintain = async (name: string, options: MaintenanceOptions, sortBy?: readonly SortKey[]) => {
      try {
        const table = await this.o.tables.existing(name);
        if (!table) return;
        // Recorded once the vacuum succeeded, even when a partition's failure is thrown after it
        // (a partition failing every pass would otherwise have its table vacuumed every pass).
        const onVacuumed = () => void this.vacuumedAt.set(name, this.now());
        this.count(await maintainTable(table, { ...options, vacuum: options.vacuum && this.vacuumDue(name), onVacuumed }, sortBy));
      } catch (err) {
        this.o.logger.warn({ table: name, err }, 'maintenance of a table failed; the others go on');
        failed ??= err;
      }
    };
    for (const contract of this.o.contracts) {
      await maintain(contract.tables.bronze, this.maintenance, [KAFKA_PARTITION, KAFKA_OFFSET]);
      if (!this.o.vacuumDerived || !this.o.maintenance.vacuum) continue;
      // Silver and gold are only vacuumed here (tier 2 compacts them): not opened when it is not due.
      for (const name of [contract.tables.silver, ...contract.aggregates.map((a) => a.table)]) {
        if (this.vacuumDue(name)) await maintain(name, { ...this.maintenance, minSmallFiles: Number.MAX_SAFE_INTEGER });
      }
    }
    if (failed !== undefined) throw failed;
    this.stats.passes += 1;
    return false;
  }

  /** Whether `table`'s last vacuum is at least the vacuum interval ago (or there was none). */
  private vacuumDue(table: string): boolean {
    return this.now() - (this.vacuumedAt.get(table) ?? -Infinity) >= this.o.vacuumIntervalMs;
  }

  private count(o: { filesRemoved: number; conflicts: number; filesVacuumed: number }): void {
    this.stats.filesRemoved += o.filesRemoved;
    this.stats.conflicts += o.conflicts;
    this.stats.filesVacuumed += o.filesVacuumed;
  }
}
