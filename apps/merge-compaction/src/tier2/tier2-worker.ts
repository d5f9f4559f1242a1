import { SILVER_ROW_ORDER, type AnyContract } from '@sluice/contracts';
import type { LakeQueryEngine, LakeTable, SortKey } from '@sluice/lake';
import type { Logger, SluiceMetrics } from '@sluice/telemetry';
import { maintainTable, type MaintenanceOptions } from '../compaction/maintenance';
import { Periodic } from '../flow/periodic';
import { WINDOW_MS, silverMergeLayout } from '../tables/layout';
import type { TableSet } from '../tables/table-set';
import { ContractFolder, type FoldOutcome } from './fold';

/** Shortest maintenance slice between two fold steps. */
const MIN_MAINTENANCE_SLICE_MS = 100;

/** Options of {@link Tier2Worker}. */
export interface Tier2Options {
  readonly contracts: readonly { contract: AnyContract; topic: string }[];
  readonly tables: TableSet;
  readonly engine: LakeQueryEngine;
  readonly intervalMs: number;
  readonly maxRows: number;
  readonly foldPercent: number;
  readonly goldIntervalMs: number;
  readonly watermarkMs: number;
  readonly retryMaxMs: number;
  /** Silver and gold are compacted here, between folds, so a compaction can never race a MERGE. */
  readonly maintenance: MaintenanceOptions & { intervalMs: number };
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
}

/**
 * Tier 2: folds bronze into silver and gold for each contract on its own cadence, and compacts
 * silver and gold between folds (the single writer of those tables, so compaction and MERGE are
 * serialised by construction rather than by retrying conflicts).
 */
export class Tier2Worker {
  private readonly folders: ContractFolder[];
  private readonly job: Periodic;
  private lastMaintenance = 0;
  /** A maintenance round is under way: it goes on in slices between folds until done. */
  private maintaining = false;
  /** Counters tests read. */
  readonly stats = { steps: 0, silverRows: 0, goldWindows: 0 };

  constructor(private readonly o: Tier2Options) {
    this.folders = o.contracts.map(
      ({ contract, topic }) =>
        new ContractFolder({ contract, topic, tables: o.tables, engine: o.engine, maxRows: o.maxRows, foldPercent: o.foldPercent, goldIntervalMs: o.goldIntervalMs, watermarkMs: o.watermarkMs, logger: o.logger, metrics: o.metrics }),
    );
    this.job = new Periodic('tier2 fold', o.intervalMs, () => this.tick(), o.logger, o.retryMaxMs);
  }

  /** False while folds keep failing for longer than a minute (readiness). */
  get healthy(): boolean {
    return this.job.failures === 0 || this.job.sinceOkMs < 60_000;
  }

  start(): void {
    this.job.start();
  }

  /** Bronze has new rows (tier 1 in this process committed): fold now, not at the next interval. */
  wake(): void {
    this.job.wake();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /**
   * One pass over every contract, silver first for all of them and then gold, so a contract's
   * silver never waits for other contracts' gold; true when some contract is still behind. A step
   * that fails does not hold back the other contracts' steps: the pass goes on, and then fails
   * with the first error (the job retries it with back-off).
   */
  async tick(): Promise<boolean> {
    let behind = false;
    let failure: { error: unknown } | undefined;
    const run = async (step: () => Promise<FoldOutcome>) => {
      try {
        const out = await step();
        this.stats.silverRows += out.silverRows;
        this.stats.goldWindows += out.goldWindows;
        behind ||= out.behind;
      } catch (error) {
        failure ??= { error };
      }
    };
    for (const folder of this.folders) await run(() => folder.silverStep());
    for (const folder of this.folders) await run(() => folder.goldStep());
    this.stats.steps += this.folders.length;
    if (failure) throw failure.error;
    if (this.maintaining || Date.now() - this.lastMaintenance >= this.o.maintenance.intervalMs) {
      const starting = !this.maintaining;
      if (starting) this.lastMaintenance = Date.now();
      // A slice as long as the fold cadence: compacting every silver bucket in one go held
      // the folds back for seconds (docs/bench/merge.md).
      this.maintaining = !(await this.maintain(starting, performance.now() + Math.max(MIN_MAINTENANCE_SLICE_MS, this.o.intervalMs)));
    }
    return behind;
  }

  /** One slice of a maintenance round (the tail fold-all only when the round starts); true when the round is done. */
  private async maintain(starting: boolean, deadline: number): Promise<boolean> {
    let done = true;
    const step = async (table: LakeTable, sortBy: readonly SortKey[]): Promise<void> => {
      if (performance.now() >= deadline) {
        done = false; // out of time: this table's turn comes in the next slice
        return;
      }
      done = !(await maintainTable(table, this.o.maintenance, sortBy, deadline)).unfinished && done;
    };
    for (const { contract } of this.o.contracts) {
      const silver = await this.o.tables.existing(contract.tables.silver);
      if (starting && silver && this.o.foldPercent > 0) {
        // ADR 0001: fold every pending tail bucket now and then, so readers outside Sluice (Spark,
        // delta-rs) see silver at most one maintenance interval behind.
        const r = await silver.merge({ ...silverMergeLayout(contract), source: { rows: [] }, amortise: { foldAll: true } });
        if (r.foldedPartitions) this.o.logger.info({ table: silver.name, buckets: r.foldedPartitions, version: r.version }, 'silver tail folded for outside readers');
      }
      if (silver) await step(silver, SILVER_ROW_ORDER);
      for (const aggregate of contract.aggregates) {
        const gold = await this.o.tables.existing(aggregate.table);
        if (gold) await step(gold, [WINDOW_MS]);
      }
    }
    return done;
  }
}
