import type { AnyContract, GoldAggregate } from '@sluice/contracts';
import { FileLease, type ColumnSpec, type LakeQueryEngine, type LakeTable, type LiveFile, type MergeResult, type Snapshot, type WriteSource } from '@sluice/lake';
import type { Logger, SluiceMetrics } from '@sluice/telemetry';
import {
  BUCKET,
  EVENT_DATE,
  GOLD_ROW_VERSION,
  INGESTED_AT,
  KAFKA_OFFSET,
  KAFKA_PARTITION,
  KEY_HASH,
  PRODUCED_AT,
  WINDOW_MS,
  WINDOW_START,
  silverKeys,
  silverMergeLayout,
} from '../tables/layout';
import { both, newestFirstChunks, overlapping, partitionTxns, rangesWithinBytes, windowRuns, type OffsetRange } from '../tables/pruning';
import type { TableSet } from '../tables/table-set';
import { TombstoneMemory } from './tombstones';

/**
 * `txn` app ids per Kafka partition of the three tiers (docs/design/merge-compaction.md, "Tables").
 * `fold-time:` and `fold-time-at:` are not offsets: silver records with them, in the fold's own
 * commit, the newest event time (epoch ms) folded from each partition and the `fold:` offset that
 * time holds for, so the tombstone memory's per-partition windows are known on a restart without
 * reading bronze's history. A time whose `fold-time-at:` is not the `fold:` offset was left behind
 * by a writer that did not record times (an earlier release): it is not trusted.
 */
export const TXN_PREFIX = { bronze: 'bronze:', fold: 'fold:', foldTime: 'fold-time:', foldTimeAt: 'fold-time-at:', gold: 'gold:' } as const;

const BRONZE_ONLY = new Set([EVENT_DATE, KAFKA_PARTITION, KAFKA_OFFSET, INGESTED_AT, PRODUCED_AT, KEY_HASH, BUCKET]);

/** Options of {@link ContractFolder}. */
export interface FoldOptions {
  readonly contract: AnyContract;
  /** The contract's valid topic as consumed (with any prefix). */
  readonly topic: string;
  readonly tables: TableSet;
  readonly engine: LakeQueryEngine;
  /** Max bronze offsets folded per partition per step (the merge window). */
  readonly maxRows: number;
  /** Amortised MERGE threshold, % of a bucket's rows (0 = plain copy-on-write every step). */
  readonly foldPercent: number;
  readonly watermarkMs: number;
  /**
   * Most bronze bytes one read may hold in bronze's file cache (S3): a step's increment is cut to
   * fit, and the tombstone rebuild reads in chunks within it. Undefined: no bound.
   */
  readonly maxReadBytes?: number;
  /** Gold takes bronze's new rows at most this often (ms); silver folds every step. */
  readonly goldIntervalMs: number;
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
  readonly now?: () => number;
}

/** What one silver or gold step did. */
export interface FoldOutcome {
  readonly silverRows: number;
  readonly goldWindows: number;
  /** True when bronze had more than one window's worth pending (call again soon). */
  readonly behind: boolean;
}

const NOTHING_DONE: FoldOutcome = { silverRows: 0, goldWindows: 0, behind: false };

type Range = OffsetRange;

/**
 * Tier 2 for one contract: folds bronze increments into silver (version-ordered MERGE through
 * libs/lake) and adds them to the gold windows they touch. Progress lives in the target tables'
 * `txn` actions, so a restarted or replaced worker resumes exactly (invariants 5 and 6).
 * One folder per contract per deployment: silver and gold have a single writer.
 */
export class ContractFolder {
  private tombstones: TombstoneMemory | undefined;
  /**
   * Silver's fold offsets the tombstone memory holds every delete up to: set when it is rebuilt
   * and by each step this folder commits. Silver at other offsets means another writer folded
   * (a second tier 2, a zombie pod): its deletes are not in the memory, which is rebuilt.
   */
  private tombstonesAt: ReadonlyMap<number, number> | undefined;
  /**
   * Per gold table: when its last step ran, and whether it left bronze rows for the next (it
   * took its `maxRows`), in which case the next runs at once.
   */
  private readonly goldProgress = new Map<string, { lastMs: number; behind: boolean }>();
  /** Bronze's written offsets per partition, and each target table's folded ones, as last read (for {@link waitingOnFailure}). */
  private lastWritten: ReadonlyMap<number, number> = new Map();
  private readonly lastFolded = new Map<string, ReadonlyMap<number, number>>();
  private readonly now: () => number;

  constructor(private readonly o: FoldOptions) {
    this.now = o.now ?? Date.now;
  }

  // Each silver step, and each gold aggregate, runs in a FileLease: the bronze files its relation
  // fetched into an S3 cache, and the files its MERGE reads, stay there until it ends. Unpinned,
  // they were the first a full cache evicted, between the fetch and DuckDB's read, and the step
  // failed as if vacuumed.

  /** Folds bronze's new rows into silver; a no-op when silver is up to date with bronze. */
  async silverStep(): Promise<FoldOutcome> {
    return this.waitingOnFailure(this.o.tables.name(this.o.contract.tables.silver), () => FileLease.holding(() => this.foldSilverStep()));
  }

  private async foldSilverStep(): Promise<FoldOutcome> {
    const view = await this.bronzeView();
    if (!view) return this.nothingWaits([this.o.contract.tables.silver]);
    const contractCols = contractColumnsOf(view.snapshot);
    const silver = await this.o.tables.silver(this.o.contract, contractCols);
    await this.o.tables.evolve(silver, contractCols);
    const started = performance.now();
    const s = await this.foldSilver(view.table, view.snapshot, silver, view.written);
    this.o.logger.debug({ contract: this.o.contract.name, silverMs: Math.round(performance.now() - started), rows: s.rows }, 'silver step');
    return { silverRows: s.rows, goldWindows: 0, behind: s.behind };
  }

  /**
   * Adds bronze's new rows to the windows of one of the contract's gold aggregates, at most every
   * `goldIntervalMs` unless its last step left rows behind; a no-op when that gold table is up to
   * date with bronze or the interval has not passed. (A step takes at most `maxRows` offsets:
   * held to the interval, gold kept up with at most `maxRows` per interval, 20k/s by default, and
   * fell behind for good above it.) Each aggregate is its own step with its own progress, so one
   * that fails holds back none of the others.
   */
  async goldStep(aggregate: GoldAggregate): Promise<FoldOutcome> {
    let progress = this.goldProgress.get(aggregate.table);
    if (progress === undefined) this.goldProgress.set(aggregate.table, (progress = { lastMs: -Infinity, behind: false }));
    if (!progress.behind && this.now() - progress.lastMs < this.o.goldIntervalMs) return NOTHING_DONE;
    const view = await this.bronzeView();
    if (!view) return this.nothingWaits([aggregate.table]);
    const startedMs = this.now();
    const started = performance.now();
    const table = this.o.tables.name(aggregate.table);
    const g = await this.waitingOnFailure(table, () => FileLease.holding(() => this.foldGold(view.table, view.snapshot, aggregate, view.written)));
    // Only a step that succeeded starts the interval: a failed one is tried again after its
    // back-off, and keeps failing there (readiness counts it), instead of passing as a no-op
    // until the interval is over.
    progress.lastMs = startedMs;
    progress.behind = g.behind;
    this.o.logger.debug({ contract: this.o.contract.name, table, goldMs: Math.round(performance.now() - started), goldWindows: g.windows }, 'gold step');
    return { silverRows: 0, goldWindows: g.windows, behind: g.behind };
  }

  /** Bronze as a step reads it: the table, its snapshot and the last offset written per partition (none yet: undefined). */
  private async bronzeView(): Promise<{ table: LakeTable; snapshot: Snapshot; written: Map<number, number> } | undefined> {
    const table = await this.o.tables.existing(this.o.contract.tables.bronze);
    if (!table) return undefined;
    const snapshot = await table.snapshot();
    const written = partitionTxns(snapshot, TXN_PREFIX.bronze, this.o.topic);
    this.lastWritten = written;
    return written.size === 0 ? undefined : { table, snapshot, written };
  }

  /** Bronze holds nothing to fold: nothing waits for `tables` (reported, so a running folder is told from an absent one). */
  private nothingWaits(tables: readonly string[]): FoldOutcome {
    for (const t of tables) this.o.metrics.tableWaiting.set(0, { table: this.o.tables.name(t) });
    return NOTHING_DONE;
  }

  /**
   * Runs a step; when it fails, publishes what waits for `table` from bronze's offsets and the
   * table's folded offsets as last read. A step failing before it reads its target (opening,
   * evolving the schema) would leave the gauge where the last good step set it, 0 once caught up:
   * a stuck table read as an idle one.
   */
  private async waitingOnFailure<T>(table: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      this.o.metrics.tableWaiting.set(waitingOffsets(this.lastWritten, this.lastFolded.get(table)), { table });
      throw err;
    }
  }

  /**
   * The bronze offset ranges this step folds into `target` (table `table`), and whether more are
   * left. A step takes at most `maxRows` offsets (its rows are held in memory) and, on S3, bronze
   * files of at most `maxReadBytes` (its read must fit bronze's file cache), both shared by the
   * partitions behind. Publishes the offsets waiting for the target (bronze offsets it has not
   * folded) before the step: a step that keeps failing leaves them up, so the table reads as
   * stuck, not idle.
   */
  private ranges(bsnap: Snapshot, target: Snapshot, table: string, prefix: string, written: Map<number, number>): { ranges: Range[]; behind: boolean; left: number } {
    const done = partitionTxns(target, prefix, this.o.topic);
    this.lastFolded.set(table, done);
    const pending = [...written].map(([partition, w]) => ({ partition, from: done.get(partition) ?? -1, w })).filter((p) => p.w > p.from);
    const share = Math.max(1, Math.floor(this.o.maxRows / Math.max(1, pending.length)));
    const byRows = pending.map(({ partition, from, w }) => ({ partition, from, to: Math.min(w, from + share) }));
    const ranges = rangesWithinBytes(bsnap, byRows, this.o.maxReadBytes ?? Infinity, KAFKA_PARTITION, KAFKA_OFFSET);
    let behind = false;
    let left = 0;
    for (const r of ranges) {
      const w = written.get(r.partition) ?? r.to;
      behind ||= r.to < w;
      left += w - r.to;
    }
    this.o.metrics.tableWaiting.set(waitingOffsets(written, done), { table });
    return { ranges, behind, left };
  }

  private async foldSilver(bronze: LakeTable, bsnap: Snapshot, silver: LakeTable, written: Map<number, number>) {
    const ssnap = await silver.snapshot();
    const contract = this.o.contract;
    const table = this.o.tables.name(contract.tables.silver);
    const { ranges, behind, left } = this.ranges(bsnap, ssnap, table, TXN_PREFIX.fold, written);
    if (ranges.length === 0) return { rows: 0, behind };
    const foldedAt = partitionTxns(ssnap, TXN_PREFIX.fold, this.o.topic);
    if (this.tombstones && !sameOffsets(foldedAt, this.tombstonesAt)) {
      this.o.logger.warn({ table, folded: Object.fromEntries(foldedAt), expected: Object.fromEntries(this.tombstonesAt ?? []) }, 'silver was folded by another writer; rebuilding the tombstone memory from bronze');
      this.tombstones = undefined;
    }
    const tombstones = await this.tombstoneMemory(bronze, bsnap, ssnap);
    const keys = silverKeys(contract);
    const { where, files } = rangeFilter(bsnap, ranges);
    // Each key's newest row in the ranges; the offset breaks ties, so both passes pick the same row.
    const newest = (from: string, extra = '') => `SELECT *${extra} FROM ${from} WHERE ${where}
      QUALIFY row_number() OVER (PARTITION BY ${keys.join(', ')} ORDER BY version DESC, event_id DESC, ${KAFKA_PARTITION} DESC, ${KAFKA_OFFSET} DESC) = 1`;
    // Pass 1: only what the fold decides in JS (keys, versions, ops, times), never whole rows.
    const queryStarted = performance.now();
    // p_newest: the newest event time of each partition over every row of the step (a key's
    // newest version need not be its newest event).
    const facts = await this.queryBronze(
      bronze,
      bsnap,
      files,
      `SELECT ${keys.join(', ')}, version, op, ${KAFKA_PARTITION} AS p, ${KAFKA_OFFSET} AS o, epoch_ms(${PRODUCED_AT}) AS produced_ms, epoch_ms(event_time) AS event_ms, p_newest
       FROM (${newest('bronze', `, max(epoch_ms(event_time)) OVER (PARTITION BY ${KAFKA_PARTITION}) AS p_newest`)})`,
    );
    const queriedMs = Math.round(performance.now() - queryStarted);
    const superseded: string[] = [];
    const deletes: { key: string; version: number; eventMs: number; partition: number }[] = [];
    const newestByPartition = new Map<number, number>();
    let oldestProduced = Infinity;
    for (const r of facts) {
      const key = contract.entityKey(r);
      const version = Number(r.version);
      const partition = Number(r.p);
      const eventMs = Number(r.event_ms);
      newestByPartition.set(partition, Math.max(newestByPartition.get(partition) ?? -Infinity, Number(r.p_newest)));
      if (contract.kind === 'state' && tombstones.supersedes(key, version)) {
        superseded.push(`(${partition}, ${Number(r.o)})`);
        continue;
      }
      if (r.produced_ms !== null && r.produced_ms !== undefined) oldestProduced = Math.min(oldestProduced, Number(r.produced_ms));
      if (r.op === 'delete') deletes.push({ key, version, eventMs, partition });
    }
    // Pass 2: the rows go bronze → silver inside DuckDB (silver takes the columns it has by name).
    const rows = `(${await bronze.relationSql(bsnap, files)})`;
    const source = superseded.length
      ? `SELECT n.* FROM (${newest(rows)}) n
         WHERE NOT EXISTS (SELECT 1 FROM (VALUES ${superseded.join(', ')}) s(p, o) WHERE s.p = n.${KAFKA_PARTITION} AND s.o = n.${KAFKA_OFFSET})`
      : newest(rows);
    // Silver's fold offsets once this step commits.
    const foldedAfter = new Map([...foldedAt, ...ranges.map((r): [number, number] => [r.partition, r.to])]);
    const txns = [...ranges.map((r) => ({ appId: `${TXN_PREFIX.fold}${this.o.topic}-${r.partition}`, version: r.to })), ...this.foldTimeTxns(ssnap, foldedAfter, newestByPartition, tombstones)];
    let result: MergeResult;
    try {
      result = await silver.merge({
        ...silverMergeLayout(contract),
        source: { sql: source },
        txns,
        amortise: this.o.foldPercent > 0 ? { foldFraction: this.o.foldPercent / 100 } : undefined,
      });
    } catch (err) {
      // The MERGE may have committed before it failed (the amortised one cleans its tail after
      // silver's commit), moving the fold offsets past these deletes: memory is rebuilt from
      // bronze and those offsets on the next step instead of missing them for good.
      this.tombstones = undefined;
      throw err;
    }
    for (const d of deletes) tombstones.remember(d.key, d.version, d.eventMs, d.partition);
    for (const [partition, eventMs] of newestByPartition) tombstones.observe(partition, eventMs);
    tombstones.expire();
    this.tombstonesAt = foldedAfter;
    const folded = facts.length - superseded.length;
    this.o.metrics.tableWaiting.set(left, { table });
    // Merge and commit duration, commits, rewritten bytes, table version and last-commit time come
    // from libs/lake's merge and commit events (docs/design/telemetry.md, "Who records what");
    // recording them here as well would count every fold twice. Freshness is the app's.
    if (Number.isFinite(oldestProduced)) this.o.metrics.freshness.record(Math.max(0, this.now() - oldestProduced) / 1000, { table });
    this.o.logger.debug(
      { table, version: result.version, queriedMs, mergeMs: Math.round(result.durationMs), folded: result.foldedPartitions, rows: folded, superseded: superseded.length, inserted: result.rowsInserted, updated: result.rowsUpdated, deleted: result.rowsDeleted, ranges },
      'silver fold',
    );
    return { rows: folded, behind };
  }

  /**
   * Adds the aggregates of bronze's new rows (offsets past gold's `txn`) to the stored measures of
   * the windows they touch. Counts and sums are additive, so a step reads its increment and the
   * touched gold rows, never the rest of a window's bronze (a late event used to pull a whole day
   * of compacted bronze into the read, past what an S3 cache holds). Exactly once through the
   * commit: the sums and the new `txn` land together, and the commit requires the `txn` the step
   * read (`expectedTxns`), so a replay after a crash starts from what was committed and a second
   * writer fails instead of adding the same rows twice.
   */
  private async foldGold(bronze: LakeTable, bsnap: Snapshot, aggregate: GoldAggregate, written: Map<number, number>) {
    const gold = await this.o.tables.gold(this.o.contract, aggregate);
    const gsnap = await gold.snapshot();
    const table = this.o.tables.name(aggregate.table);
    const { ranges, behind, left } = this.ranges(bsnap, gsnap, table, TXN_PREFIX.gold, written);
    if (ranges.length === 0) return { windows: 0, behind };
    const w = aggregate.windowMs;
    const { where, files } = rangeFilter(bsnap, ranges);
    const windowOf = `(epoch_ms(event_time) // ${w}) * ${w}`;
    const counted = `op <> 'delete' AND ${where} ${aggregate.groupBy.map((g) => `AND ${g} IS NOT NULL`).join(' ')}`;
    const windowRows = await this.queryBronze(bronze, bsnap, files, `SELECT DISTINCT ${windowOf} AS wm FROM bronze WHERE ${counted}`);
    const windows = windowRows.map((r) => Number(r.wm)).sort((a, b) => a - b);
    // The sums go bronze → gold inside DuckDB, never as JS objects.
    let source: WriteSource = { rows: [] };
    if (windows.length > 0) {
      const increment = `(${await bronze.relationSql(bsnap, files)})`;
      // Only the gold files that may hold the touched windows.
      const runs = windowRuns(windows, w).map(([lo, hi]) => overlapping(gsnap, WINDOW_MS, lo, hi));
      const stored = `(${await gold.relationSql(gsnap, (f) => runs.some((keep) => keep(f)))})`;
      const groups = aggregate.groupBy.join(', ');
      const measures = aggregate.measures.map((m) => (m.fn === 'count' ? `count(*) AS ${m.name}` : `sum(${m.column}) AS ${m.name}`)).join(', ');
      // A sum over nulls only stays null, as a sum over all the rows would be.
      const added = aggregate.measures
        .map((m) => (m.fn === 'count' ? `i.${m.name} + coalesce(g.${m.name}, 0)` : `CASE WHEN g.${m.name} IS NULL THEN i.${m.name} WHEN i.${m.name} IS NULL THEN g.${m.name} ELSE i.${m.name} + g.${m.name} END`) + ` AS ${m.name}`)
        .join(', ');
      const joined = [WINDOW_MS, ...aggregate.groupBy].map((k) => `g.${k} = i.${k}`).join(' AND ');
      source = {
        // The merge version must pass the stored row's: bronze's version can repeat across steps
        // (a step that was behind continues on the same snapshot).
        sql: `WITH i AS (SELECT ${windowOf} AS ${WINDOW_MS}, ${groups}, ${measures} FROM ${increment} bronze WHERE ${counted} GROUP BY ALL)
              SELECT i.${WINDOW_MS}, make_timestamptz(i.${WINDOW_MS} * 1000) AS ${WINDOW_START}, ${aggregate.groupBy.map((g) => `i.${g}`).join(', ')}, ${added},
                     greatest(${bsnap.version}, coalesce(g.${GOLD_ROW_VERSION} + 1, 0)) AS ${GOLD_ROW_VERSION}
              FROM i LEFT JOIN ${stored} g ON ${joined}`,
      };
    }
    const appId = (partition: number) => `${TXN_PREFIX.gold}${this.o.topic}-${partition}`;
    const txns = ranges.map((r) => ({ appId: appId(r.partition), version: r.to }));
    const expectedTxns = Object.fromEntries(ranges.map((r) => [appId(r.partition), r.from < 0 ? null : r.from]));
    await gold.merge({ source, keys: [WINDOW_MS, ...aggregate.groupBy], versionColumn: GOLD_ROW_VERSION, clusterColumn: WINDOW_MS, txns, expectedTxns });
    this.o.metrics.tableWaiting.set(left, { table });
    return { windows: windows.length, behind };
  }

  /** Runs `sql` over the bronze files `files` keeps, exposed as the view `bronze`. */
  private async queryBronze(bronze: LakeTable, bsnap: Snapshot, files: (f: LiveFile) => boolean, sql: string) {
    const session = await this.o.engine.open({ bronze: { storage: bronze.storage, snapshot: bsnap, files } });
    try {
      return await session.queryJson(sql);
    } finally {
      session.close();
    }
  }

  /**
   * Rebuilt from bronze once per process (and after a failed MERGE, or another writer's fold):
   * the folded tombstones within the watermark of their partition's newest folded event. Those
   * times come from silver's `fold-time:` txns; only the bronze files whose event times meet a
   * partition's window are read, in chunks of at most `maxReadBytes` (one read of every folded
   * bronze file passed an S3 cache's bound). A partition far behind the others costs its own
   * window's files, not the history in between (a walk back to it read everything since).
   */
  private async tombstoneMemory(bronze: LakeTable, bsnap: Snapshot, ssnap: Snapshot): Promise<TombstoneMemory> {
    if (this.tombstones) return this.tombstones;
    const memory = new TombstoneMemory(this.o.watermarkMs);
    const folded = partitionTxns(ssnap, TXN_PREFIX.fold, this.o.topic);
    this.tombstonesAt = folded;
    if (this.o.contract.kind === 'state' && folded.size > 0) {
      const ranges = [...folded].map(([partition, to]) => ({ partition, from: -1, to }));
      const { where, files } = rangeFilter(bsnap, ranges);
      const recorded = partitionTxns(ssnap, TXN_PREFIX.foldTime, this.o.topic);
      const recordedAt = partitionTxns(ssnap, TXN_PREFIX.foldTimeAt, this.o.topic);
      // Per partition: a recorded time holds when it was recorded at the current fold offset;
      // bronze is read only for the partitions where it was not.
      const newest = new Map([...recorded].filter(([p]) => recordedAt.get(p) === folded.get(p)));
      const unknown = ranges.filter((r) => !newest.has(r.partition));
      if (unknown.length > 0) {
        const u = rangeFilter(bsnap, unknown);
        for (const [p, ms] of await this.newestFolded(bronze, bsnap, u.where, u.files)) newest.set(p, ms);
      }
      // From up to the wall clock, as the memory keeps it (TombstoneMemory.observe).
      const windows = [...newest].map(([partition, ms]) => ({ partition, from: Math.min(ms, Date.now()) - this.o.watermarkMs, to: ms }));
      const meetsWindow = windows.map((w) => overlapping(bsnap, 'event_time', w.from, w.to));
      const inWindow = (f: LiveFile) => files(f) && meetsWindow.some((meets) => meets(f));
      const within = windows.map((w) => `(${KAFKA_PARTITION} = ${w.partition} AND epoch_ms(event_time) >= ${w.from})`).join(' OR ');
      for (const chunk of newestFirstChunks(bsnap, inWindow, 'event_time', this.o.maxReadBytes ?? Infinity)) {
        const paths = new Set(chunk.files.map((f) => f.path));
        const sql = `SELECT *, epoch_ms(event_time) AS __event_ms FROM bronze WHERE op = 'delete' AND (${where}) AND (${within || 'false'})`;
        for (const r of await this.queryBronze(bronze, bsnap, (f) => paths.has(f.path), sql)) {
          memory.remember(this.o.contract.entityKey(r), Number(r.version), Number(r.__event_ms), Number(r[KAFKA_PARTITION]));
        }
      }
      for (const [partition, ms] of newest) memory.observe(partition, ms);
    }
    this.tombstones = memory;
    return memory;
  }

  /**
   * `fold-time:` and `fold-time-at:` of every partition a step folds, and of every folded partition
   * whose recorded time is stale (left so by a writer that records none; the memory, rebuilt from
   * bronze since, knows its time): the newest event time folded from it so far (the recorded one,
   * the memory's, this step's; 0 for a partition with no row folded yet, which has no delete to
   * keep), and the `fold:` offset it holds for after this commit.
   */
  private foldTimeTxns(ssnap: Snapshot, foldedAfter: ReadonlyMap<number, number>, stepNewest: ReadonlyMap<number, number>, memory: TombstoneMemory): { appId: string; version: number }[] {
    const recorded = partitionTxns(ssnap, TXN_PREFIX.foldTime, this.o.topic);
    const recordedAt = partitionTxns(ssnap, TXN_PREFIX.foldTimeAt, this.o.topic);
    const out: { appId: string; version: number }[] = [];
    for (const [partition, offset] of foldedAfter) {
      if (recordedAt.get(partition) === offset) continue; // recorded at this offset and not folded now
      const newest = Math.max(0, recorded.get(partition) ?? 0, memory.newestOf(partition), stepNewest.get(partition) ?? 0);
      out.push({ appId: `${TXN_PREFIX.foldTime}${this.o.topic}-${partition}`, version: newest });
      out.push({ appId: `${TXN_PREFIX.foldTimeAt}${this.o.topic}-${partition}`, version: offset });
    }
    return out;
  }

  /**
   * Each folded partition's newest event time, read from bronze (a silver folded before it
   * recorded `fold-time:` txns): every folded file once, in chunks within `maxReadBytes`, two
   * columns each. The next fold step records them.
   */
  private async newestFolded(bronze: LakeTable, bsnap: Snapshot, where: string, files: (f: LiveFile) => boolean): Promise<Map<number, number>> {
    const newest = new Map<number, number>();
    for (const chunk of newestFirstChunks(bsnap, files, 'event_time', this.o.maxReadBytes ?? Infinity)) {
      const paths = new Set(chunk.files.map((f) => f.path));
      const sql = `SELECT ${KAFKA_PARTITION} AS p, max(epoch_ms(event_time)) AS newest FROM bronze WHERE ${where} GROUP BY 1`;
      for (const r of await this.queryBronze(bronze, bsnap, (f) => paths.has(f.path), sql)) {
        newest.set(Number(r.p), Math.max(newest.get(Number(r.p)) ?? -Infinity, Number(r.newest)));
      }
    }
    return newest;
  }
}

/** Equal offset maps (partition → offset). */
function sameOffsets(a: ReadonlyMap<number, number>, b: ReadonlyMap<number, number> | undefined): boolean {
  return b !== undefined && a.size === b.size && [...a].every(([p, o]) => b.get(p) === o);
}

/** Bronze offsets not folded yet: per partition, bronze's last written offset past the folded one (none folded: from -1). */
function waitingOffsets(written: ReadonlyMap<number, number>, folded: ReadonlyMap<number, number> = new Map()): number {
  let n = 0;
  for (const [partition, w] of written) n += Math.max(0, w - (folded.get(partition) ?? -1));
  return n;
}

/** The SQL condition selecting the rows of `ranges`, and a filter of the bronze files that may hold them (stats). */
function rangeFilter(bsnap: Snapshot, ranges: readonly Range[]): { where: string; files: (f: LiveFile) => boolean } {
  const filters = ranges.map((r) => both(overlapping(bsnap, KAFKA_PARTITION, r.partition, r.partition), overlapping(bsnap, KAFKA_OFFSET, r.from + 1, r.to)));
  const where = ranges.map((r) => `(${KAFKA_PARTITION} = ${r.partition} AND ${KAFKA_OFFSET} > ${r.from} AND ${KAFKA_OFFSET} <= ${r.to})`).join(' OR ');
  return { where: `(${where})`, files: (f) => filters.some((keep) => keep(f)) };
}

/** The contract columns of bronze's current schema (so silver follows bronze's evolution). */
function contractColumnsOf(bsnap: Snapshot): ColumnSpec[] {
  return bsnap.schema.fields.filter((f) => !BRONZE_ONLY.has(f.name)).map((f) => ({ name: f.name, type: f.type, nullable: f.nullable }));
}
