import type { AnyContract } from '@sluice/contracts';
import type { LakeQueryEngine } from '@sluice/lake';
import type { Logger, SluiceMetrics } from '@sluice/telemetry';
import { maintainTable, type MaintenanceOptions } from '../compaction/maintenance';
import { Periodic } from '../flow/periodic';
import { KEY_HASH, WINDOW_MS, silverKeys } from '../tables/layout';
import type { TableSet } from '../tables/table-set';
import { ContractFolder } from './fold';

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

  stop(): Promise<void> {
    return this.job.stop();
  }

  /** One pass over every contract; true when some contract is still behind. */
  async tick(): Promise<boolean> {
    let behind = false;
    for (const folder of this.folders) {
      const out = await folder.step();
      this.stats.steps += 1;
      this.stats.silverRows += out.silverRows;
      this.stats.goldWindows += out.goldWindows;
      behind ||= out.behind;
    }
    if (Date.now() - this.lastMaintenance >= this.o.maintenance.intervalMs) {
      this.lastMaintenance = Date.now();
      await this.maintain();
    }
    return behind;
  }

  private async maintain(): Promise<void> {
    for (const { contract } of this.o.contracts) {
      const silver = await this.o.tables.existing(contract.tables.silver);
      if (silver && this.o.foldPercent > 0) {
        // ADR 0001: fold every pending tail bucket now and then, so readers outside Sluice (Spark,
        // delta-rs) see silver at most one maintenance interval behind.
        const r = await silver.merge({
          source: { rows: [] },
          keys: silverKeys(contract),
          versionColumn: 'version',
          deleteColumn: contract.kind === 'state' ? 'op' : undefined,
          clusterColumn: KEY_HASH,
          amortise: { foldAll: true },
        });
        if (r.foldedPartitions) this.o.logger.info({ table: silver.name, buckets: r.foldedPartitions, version: r.version }, 'silver tail folded for outside readers');
      }
      if (silver) await maintainTable(silver, this.o.maintenance, [KEY_HASH]);
      for (const aggregate of contract.aggregates) {
        const gold = await this.o.tables.existing(aggregate.table);
        if (gold) await maintainTable(gold, this.o.maintenance, [WINDOW_MS]);
      }
    }
  }
}
