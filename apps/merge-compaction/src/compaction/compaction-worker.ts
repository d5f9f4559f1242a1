import type { AnyContract } from '@sluice/contracts';
import type { Logger } from '@sluice/telemetry';
import { Periodic } from '../flow/periodic';
import { KAFKA_PARTITION, KAFKA_OFFSET } from '../tables/layout';
import type { TableSet } from '../tables/table-set';
import { maintainTable, type MaintenanceOptions } from './maintenance';

/**
 * Longest slice of one compaction pass (it stops between partitions past it and goes on at once
 * in the next, from the contract it stopped at): a backlog of small files over many dates took
 * longer than the liveness bound on a pass and the process was ended before it finished.
 */
export const COMPACTION_SLICE_MS = 5 * 60_000;

/** Options of {@link CompactionWorker}. */
export interface CompactionOptions {
  readonly contracts: readonly AnyContract[];
  readonly tables: TableSet;
  readonly intervalMs: number;
  readonly retryMaxMs: number;
  /** A pass running longer than this is hung: {@link CompactionWorker.live} turns false. */
  readonly stallTimeoutMs: number;
  readonly maintenance: MaintenanceOptions;
  /** Also vacuum silver and gold (their compaction runs in tier 2). */
  readonly vacuumDerived: boolean;
  readonly logger: Logger;
}

/**
 * The compaction role: bin-packs bronze's small files per (event_date, bucket) partition, sorted
 * by Kafka coordinates so tier 2's offset ranges keep skipping files, and vacuums every table.
 * Bronze compaction never conflicts with tier 1 (blind appends, DELTA.md §6); silver and gold
 * are compacted by tier 2 itself, so this job never races a MERGE.
 */
export class CompactionWorker {
  private readonly job: Periodic;
  /** The contract the next slice starts at (where the last one ran out of time). */
  private resumeAt = 0;
  /** Counters tests read. */
  readonly stats = { passes: 0, filesRemoved: 0, conflicts: 0, filesVacuumed: 0 };

  constructor(private readonly o: CompactionOptions) {
    this.job = new Periodic('compaction', o.intervalMs, () => this.tick(), o.logger, o.retryMaxMs);
  }

  /** False while one pass has run longer than the stall timeout (a storage call that never returns). */
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

  stop(): Promise<void> {
    return this.job.stop();
  }

  /**
   * One slice of a pass over every table, from the contract the last slice stopped at; true when
   * the slice ran out of time before the pass ended (the next one starts at once).
   */
  async tick(sliceMs = COMPACTION_SLICE_MS): Promise<boolean> {
    const deadline = performance.now() + sliceMs;
    const contracts = this.o.contracts;
    for (let i = 0; i < contracts.length; i++) {
      const contract = contracts[(this.resumeAt + i) % contracts.length];
      const done = await this.maintainContract(contract, deadline);
      if (!done) {
        this.resumeAt = (this.resumeAt + i) % contracts.length;
        return true;
      }
    }
    this.resumeAt = 0;
    this.stats.passes += 1;
    return false;
  }

  /** Bronze compaction and vacuum, and the vacuum of silver and gold, of one contract; false when the deadline cut it short. */
  private async maintainContract(contract: AnyContract, deadline: number): Promise<boolean> {
    const bronze = await this.o.tables.existing(contract.tables.bronze);
    if (bronze) {
      const outcome = await maintainTable(bronze, this.o.maintenance, [KAFKA_PARTITION, KAFKA_OFFSET], deadline);
      this.count(outcome);
      if (outcome.unfinished) return false;
    }
    if (!this.o.vacuumDerived || !this.o.maintenance.vacuum) return true;
    for (const name of [contract.tables.silver, ...contract.aggregates.map((a) => a.table)]) {
      const t = await this.o.tables.existing(name);
      if (t) this.count(await maintainTable(t, { ...this.o.maintenance, minSmallFiles: Number.MAX_SAFE_INTEGER }));
    }
    return true;
  }

  private count(o: { filesRemoved: number; conflicts: number; filesVacuumed: number }): void {
    this.stats.filesRemoved += o.filesRemoved;
    this.stats.conflicts += o.conflicts;
    this.stats.filesVacuumed += o.filesVacuumed;
  }
}
