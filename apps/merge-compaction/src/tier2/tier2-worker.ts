import { SILVER_ROW_ORDER, type AnyContract, type GoldAggregate } from '@sluice/contracts';
import type { LakeQueryEngine, LakeTable, SortKey } from '@sluice/lake';
import type { Logger, SluiceMetrics } from '@sluice/telemetry';
import { maintainTable, type MaintenanceOptions } from '../compaction/maintenance';
import { Periodic } from '../flow/periodic';
import { StepRetry } from '../flow/step-retry';
import { WINDOW_MS, silverMergeLayout } from '../tables/layout';
import type { TableSet } from '../tables/table-set';
import { ContractFolder, type FoldOutcome } from './fold';

/** Shortest maintenance slice between two fold steps. */
const MIN_MAINTENANCE_SLICE_MS = 100;
/** A step failing this long makes the worker unhealthy (readiness). */
const UNHEALTHY_AFTER_MS = 60_000;

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
  /** Most bronze bytes one tier-2 read may hold in a table's file cache (S3); undefined: no bound. */
  readonly maxReadBytes?: number;
  readonly retryMaxMs: number;
  /** A pass running longer than this is hung: {@link Tier2Worker.live} turns false. */
  readonly stallTimeoutMs: number;
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
  /** Each contract's folder, with a back-off per step (silver, each gold aggregate) so a failing step holds back no other. */
  private readonly folders: { folder: ContractFolder; silver: StepRetry; gold: { aggregate: GoldAggregate; retry: StepRetry }[] }[];
  private readonly maintenanceRetry: StepRetry;
  private readonly job: Periodic;
  private lastMaintenance = 0;
  /** A maintenance round is under way: it goes on in slices between folds until done. */
  private maintaining = false;
  /** Counters tests read. */
  readonly stats = { steps: 0, silverRows: 0, goldWindows: 0 };

  constructor(private readonly o: Tier2Options) {
    this.folders = o.contracts.map(({ contract, topic }) => ({
      folder: new ContractFolder({ contract, topic, tables: o.tables, engine: o.engine, maxRows: o.maxRows, foldPercent: o.foldPercent, goldIntervalMs: o.goldIntervalMs, watermarkMs: o.watermarkMs, maxReadBytes: o.maxReadBytes, logger: o.logger, metrics: o.metrics }),
      silver: new StepRetry(`silver ${contract.name}`, o.retryMaxMs),
      gold: contract.aggregates.map((aggregate) => ({ aggregate, retry: new StepRetry(`gold ${contract.name} ${aggregate.name}`, o.retryMaxMs) })),
    }));
    this.maintenanceRetry = new StepRetry('maintenance', o.retryMaxMs);
    this.job = new Periodic('tier2 fold', o.intervalMs, () => this.tick(), o.logger, o.retryMaxMs);
  }

  /** False while a fold step (or maintenance, or the job) keeps failing for longer than a minute (readiness). */
  get healthy(): boolean {
    const now = Date.now();
    const steps = [...this.folders.flatMap((f) => [f.silver, ...f.gold.map((g) => g.retry)]), this.maintenanceRetry];
    if (steps.some((s) => s.failingForMs(now) >= UNHEALTHY_AFTER_MS)) return false;
    return this.job.failures === 0 || this.job.sinceOkMs < UNHEALTHY_AFTER_MS;
  }

  /**
   * False while one pass has run longer than the stall timeout: a storage or DuckDB call that
   * never returns would otherwise hold silver and gold where they are, with the process up.
   */
  get live(): boolean {
    return this.job.tickRunningMs < this.o.stallTimeoutMs;
  }

  /** How long the running pass has taken so far (0 between passes), for the stall report. */
  get passRunningMs(): number {
    return this.job.tickRunningMs;
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
   * (a contract's silver, one gold aggregate) that fails is logged and waits out its own back-off,
   * skipped by the passes meanwhile: it holds back neither the other steps nor maintenance. (A
   * failure used to fail the whole pass, so the job's back-off, up to SLUICE_RETRY_MAX_MS, delayed
   * every contract and maintenance never ran.)
   */
  async tick(): Promise<boolean> {
    let behind = false;
    for (const f of this.folders) behind = (await this.runStep(f.silver, () => f.folder.silverStep())) || behind;
    for (const f of this.folders) {
      for (const g of f.gold) behind = (await this.runStep(g.retry, () => f.folder.goldStep(g.aggregate))) || behind;
    }
    this.stats.steps += this.folders.length;
    const maintenanceDue = this.maintaining || Date.now() - this.lastMaintenance >= this.o.maintenance.intervalMs;
    if (maintenanceDue && this.maintenanceRetry.due(Date.now())) {
      const starting = !this.maintaining;
      if (starting) this.lastMaintenance = Date.now();
      try {
        // A slice as long as the fold cadence: compacting every silver bucket in one go held
        // the folds back for seconds (docs/bench/merge.md).
        this.maintaining = !(await this.maintain(starting, performance.now() + Math.max(MIN_MAINTENANCE_SLICE_MS, this.o.intervalMs)));
        this.maintenanceRetry.succeeded();
      } catch (err) {
        // The round is tried again after the back-off, from its start if it failed there (not at
        // the next interval: health counts the failure until a try succeeds).
        if (starting) this.lastMaintenance = 0;
        this.stepFailed(this.maintenanceRetry, err);
      }
    }
    return behind;
  }

  /** Runs one fold step unless it is backing off; true when its contract is still behind. */
  private async runStep(retry: StepRetry, step: () => Promise<FoldOutcome>): Promise<boolean> {
    if (!retry.due(Date.now())) return false;
    try {
      const out = await step();
      retry.succeeded();
      this.stats.silverRows += out.silverRows;
      this.stats.goldWindows += out.goldWindows;
      return out.behind;
    } catch (err) {
      this.stepFailed(retry, err);
      return false;
    }
  }

  private stepFailed(retry: StepRetry, err: unknown): void {
    const delay = retry.failed(Date.now());
    this.o.logger.warn({ err, step: retry.name, retryInMs: delay, failures: retry.failures }, 'tier2 step failed; the other steps go on, this one retries after a back-off');
  }

  /** One slice of a maintenance round (the tail fold-all only when the round starts); true when the round is done. */
  private async maintain(starting: boolean, deadline: number): Promise<boolean> {
    let done = true;
    // A table that fails is passed over for the slice (gold was never compacted while silver
    // failed); the first failure is thrown once the others ran.
    let failed: unknown;
    const step = async (table: LakeTable, sortBy: readonly SortKey[]): Promise<void> => {
      if (performance.now() >= deadline) {
        done = false; // out of time: this table's turn comes in the next slice
        return;
      }
      try {
        done = !(await maintainTable(table, this.o.maintenance, sortBy, deadline)).unfinished && done;
      } catch (err) {
        this.o.logger.warn({ table: table.name, err }, 'maintenance of a table failed; the others go on');
        failed ??= err;
      }
    };
    for (const { contract } of this.o.contracts) {
      const silver = await this.o.tables.existing(contract.tables.silver);
      if (starting && silver) {
        // ADR 0001: fold every pending tail bucket now and then, so readers outside Sluice (Spark,
        // delta-rs) see silver at most one maintenance interval behind. Without amortising
        // (SLUICE_SILVER_FOLD_PERCENT=0) a merge folds a tail left from before, if any, and
        // creates none: a silver that gets no more events does not keep one.
        const amortise = this.o.foldPercent > 0 ? { amortise: { foldAll: true } } : {};
        const r = await silver.merge({ ...silverMergeLayout(contract), source: { rows: [] }, ...amortise });
        if (r.foldedPartitions) this.o.logger.info({ table: silver.name, buckets: r.foldedPartitions, version: r.version }, 'silver tail folded for outside readers');
      }
      if (silver) await step(silver, SILVER_ROW_ORDER);
      for (const aggregate of contract.aggregates) {
        const gold = await this.o.tables.existing(aggregate.table);
        if (gold) await step(gold, [WINDOW_MS]);
      }
    }
    if (failed !== undefined) throw failed;
    return done;
  }
}
