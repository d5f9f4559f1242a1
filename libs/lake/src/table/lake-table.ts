import { randomUUID } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, withConnection } from '../duck';
import { errorMessage, lakeError } from '../errors';
import { hasSubscribers, publish, type TableStatsEvent } from '../events';
import { checkpointKey, commitKey, type Action, type AddAction, type CommitInfo, type MetadataAction, type RemoveAction, type TxnAction } from '../log/actions';
import { writeCheckpoint } from '../log/checkpoint';
import { parseCommit } from '../log/commit-file';
import { checkpointOpens, commitTimestamps, listLog, listLogToCutoff, loadSnapshot, loadSnapshotAfter, logHasEntries, type SnapshotTarget } from '../log/log-reader';
import { Snapshot, TABLE_PROPERTIES, checkWritable, type LiveFile } from '../log/snapshot';
import { FileLease } from '../storage/file-lease';
import type { Storage } from '../storage/storage';
import { PrefixedStorage } from '../storage/prefixed-storage';
import type { ViewSpec } from '../query/query-engine';
import { commit, type CommitPlan, type CommitResult } from './commit';
import { compactBin } from './compaction';
import { writeDataFiles } from './data-writer';
import { ingestSource, type WriteSource } from './ingest';
import { partitionValueSql } from './partition';
import { checkpointIntervalOf, DEFAULT_LOG_RETENTION_MS, fileRetentionMsOf, intervalMsOf, parquetLayoutOf, tombstoneRetentionMsOf, validateProperties } from './properties';
import { filesRelationSql, translateReadError } from './relation';
import { checkSortKeys, type SortKey } from './row-order';
import { duckType, isPartitionableType, schemaFromColumns, validateSchema, type ColumnSpec, type DeltaField, type TableSchema } from './schema';

/** Options for opening or creating a table. */
export interface LakeTableOptions {
  /** Local directory for DuckDB output before it moves into storage (default: OS temp dir). */
  scratchDir?: string;
  /** Commit attempts before giving up on a busy table (default 15, as delta-rs). */
  maxCommitAttempts?: number;
  /** Name used in events and errors (default: the storage URI). */
  name?: string;
  /**
   * What the `table-stats` event counts as compaction work (the caller's compaction settings):
   * files below `smallFileBytes` are small (default 128 MiB), and a partition with at least
   * `minSmallFiles` of them is backlog (default 2).
   */
  compactionStats?: { smallFileBytes: number; minSmallFiles: number };
  /**
   * Keep remove actions (tombstones) at least this long in this handle's snapshots and the
   * checkpoints it writes, beyond the table's `delta.deletedFileRetentionDuration`: the retention
   * the caller's vacuum passes. A file whose tombstone was dropped is judged by its mtime, so a
   * vacuum with a longer retention than the tombstones deleted files removed inside its window
   * (an old file compacted away last week).
   */
  keepTombstonesMs?: number;
}

/** How to create a table. */
export interface CreateTableSpec {
  columns: readonly ColumnSpec[];
  partitionColumns?: readonly string[];
  /** `metaData.configuration`: `delta.appendOnly`, `delta.checkpointInterval`, retention durations, or free keys. */
  properties?: Readonly<Record<string, string>>;
  name?: string;
  description?: string;
}

/** An application transaction marker written in the same commit as the data (`txn` action). */
export interface TxnSpec {
  appId: string;
  /** Application-defined, e.g. the last Kafka offset written (inclusive). */
  version: number | bigint;
}

/** Options of {@link LakeTable.append}. */
export interface AppendOptions {
  /** `txn` actions committed atomically with the data. */
  txns?: readonly TxnSpec[];
  /**
   * Fences zombie writers: per appId, the txn version the table must hold (null = no txn yet) at
   * the snapshot this write builds on and in every commit it retries past; otherwise the write
   * fails with LAKE_TXN_MISMATCH (not retryable) and commits nothing.
   */
  expectedTxns?: Readonly<Record<string, bigint | number | null>>;
  /** Split each partition's rows into files of at most this many rows (ordered by `sortBy`). */
  maxRowsPerFile?: number;
  /** Columns that order rows into files (clustering: narrow min/max per file). */
  sortBy?: readonly string[];
}

/** Result of an append. */
export interface AppendResult extends CommitResult {
  rows: number;
  filesAdded: number;
  bytesWritten: number;
}

/** A MERGE of a batch of entity changes (upsert by key, higher version wins, tombstones delete). */
export interface MergeSpec {
  source: WriteSource;
  /** Entity key columns (table columns). Partition values must be a function of the key. */
  keys: readonly string[];
  /** Integer entity version column: a batch row applies only if its version is higher. */
  versionColumn: string;
  /** Batch column marking tombstones (need not be a table column). */
  deleteColumn?: string;
  /** Value of `deleteColumn` that means delete (default 'delete'). */
  deleteValue?: string;
  /**
   * Integer column used to skip files by their min/max stats (default: the first key when it is
   * an integer). Must be a function of the key, e.g. a key hash.
   */
  clusterColumn?: string;
  /** Rewritten data is split into files of at most this many rows, sorted by the cluster column. */
  maxRowsPerFile?: number;
  /**
   * The order of rows inside the files the merge writes (with `sluice.parquet.rowGroupRows`);
   * default the cluster column. Give compaction the same order, or it undoes it.
   */
  rowOrder?: readonly SortKey[];
  txns?: readonly TxnSpec[];
  /**
   * Fences zombie writers: per appId, the txn version the table must hold (null = no txn yet) at
   * the snapshot this write builds on and in every commit it retries past; otherwise the write
   * fails with LAKE_TXN_MISMATCH (not retryable) and commits nothing (checked before
   * the amortised tail is written).
   */
  expectedTxns?: Readonly<Record<string, bigint | number | null>>;
  /**
   * Amortised copy-on-write (docs/adr/0001-merge-design.md): the batch is appended to a pending
   * tail (`_sluice_tail/`, a Delta table of its own that readers of this table never see);
   * partitions fold into this table (copy-on-write) only when the tail outgrows `foldFraction`
   * of the table. `txn` actions still land in this table in the call. Read current state with
   * {@link LakeTable.currentView}; Delta readers see the table as of its last fold. A merge
   * without it on a table whose tail holds rows folds the whole tail with its batch.
   */
  amortise?: AmortiseOptions;
}

/** Tuning of amortised MERGE. */
export interface AmortiseOptions {
  /**
   * Pending rows allowed in the tail, as a fraction of the table's rows (default 0.1). Above it,
   * partitions with the highest pending share fold until the tail is back under. Higher means
   * less rewriting per event (~1/(2·fraction) rows) and more work for fresh reads.
   */
  foldFraction?: number;
  /** Never fold while the tail holds fewer rows than this (default 0). */
  minPendingRows?: number;
  /** Fold every pending partition now (e.g. before handing the table to outside readers). */
  foldAll?: boolean;
}

/** What a MERGE did. `version` is undefined when nothing needed committing. */
export interface MergeResult {
  version: number | undefined;
  /** Files whose key columns were scanned (after partition and stats pruning), and their bytes. */
  filesRead: number;
  bytesRead: number;
  /** Files removed and rewritten because a batch row superseded one of their rows. */
  filesRewritten: number;
  bytesRewritten: number;
  filesAdded: number;
  bytesWritten: number;
  rowsInserted: number;
  rowsUpdated: number;
  rowsDeleted: number;
  durationMs: number;
  /** Amortised merges: partitions folded by this call, and rows still pending in the tail after it. */
  foldedPartitions?: number;
  pendingRows?: number;
}

/** Compaction options. */
export interface CompactOptions {
  /** Target output file size in bytes (default 128 MiB). Files at or above it are left alone. */
  targetFileBytes?: number;
  /**
   * Only files below this size are rewritten (default: the target). A planner that picks
   * partitions by their small files passes its own bound: with the target alone, a 100 MiB file
   * was rewritten whole to take in a few small ones, pass after pass, until it reached 128 MiB.
   */
  smallFileBytes?: number;
  /** Only compact partitions whose values match these (Delta partition strings). */
  partition?: Readonly<Record<string, string | null>>;
  /** Sort the rewritten rows by these columns (or truncated times, see {@link SortKey}). */
  sortBy?: readonly SortKey[];
  /**
   * Called after each output file is written, before the one commit: a compaction of a large
   * partition shows progress between its bins (a caller's stall watch would take it for a hang).
   */
  onFileWritten?: () => void;
}

/** What a compaction did. `version` is undefined when there was nothing to compact. */
export interface CompactResult {
  version: number | undefined;
  filesRemoved: number;
  bytesRemoved: number;
  filesAdded: number;
  bytesAdded: number;
  durationMs: number;
}

/**
 * Shortest retention {@link LakeTable.vacuum} accepts (1 hour) unless told the table is idle.
 * A file a writer has written but not yet committed is unreferenced, and so is a file a reader's
 * pinned snapshot still reads: a retention shorter than the longest write-to-commit gap or the
 * longest read deletes files that a commit then references or a query is reading (Delta's
 * `retentionDurationCheck` guards the same way).
 */
export const MIN_VACUUM_RETENTION_MS = 3_600_000;

/** Vacuum options. */
export interface VacuumOptions {
  /**
   * Files unreferenced for less than this stay (default: `delta.deletedFileRetentionDuration`,
   * 7 days). Under {@link MIN_VACUUM_RETENTION_MS}, whether given here or by the table property,
   * vacuum refuses (LAKE_INVALID_INPUT) unless `unsafeShortRetention` is set. Longer than the
   * handle keeps tombstones (the table property, or `keepTombstonesMs`) it refuses too: a file
   * removed before the tombstones' retention but inside this one could not be told apart.
   */
  retentionMs?: number;
  /** Accept a retention under {@link MIN_VACUUM_RETENTION_MS}: only when nothing writes or reads the table meanwhile (tests, offline repair). */
  unsafeShortRetention?: boolean;
  /** List what would be deleted without deleting. */
  dryRun?: boolean;
  /** Clock for tests (ms since epoch). */
  nowMs?: number;
}

/** What vacuum deleted (or would delete in a dry run). */
export interface VacuumResult {
  filesDeleted: string[];
  bytesDeleted: number;
  durationMs: number;
}

/** One commit's provenance, newest first in {@link LakeTable.history}. */
export interface HistoryEntry {
  version: number;
  timestampMs: number;
  operation: string | undefined;
  commitInfo: CommitInfo | undefined;
}

const DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024;
/** Compaction work as `table-stats` counts it when the caller does not say (LakeTableOptions.compactionStats). */
const DEFAULT_COMPACTION_STATS = { smallFileBytes: DEFAULT_TARGET_FILE_BYTES, minSmallFiles: 2 };
/** Key prefix of the amortised-merge tail inside a table root (ignored by Delta readers and vacuum). */
export const TAIL_PREFIX = '_sluice_tail/';
const TAIL_PROPERTIES = { keys: 'sluice.tail.keys', version: 'sluice.tail.version', deleteColumn: 'sluice.tail.deleteColumn', deleteValue: 'sluice.tail.deleteValue' } as const;

/**
 * A Delta Lake table (reader 1 / writer 2, no table features) in a {@link Storage}. Stateless
 * between calls: every operation reads the log, so any number of processes may share a table.
 */
export class LakeTable {
  readonly storage: Storage;
  /** Name for events and errors: options.name, else the table's metaData.name, else the storage URI. */
  readonly name: string;
  private readonly compactionStats: LakeTableOptions['compactionStats'];
  private readonly scratchDir: string;
  private readonly maxAttempts: number;
  /** The newest snapshot loaded so far: a later load reads only the commits after it. */
  private latest: Snapshot | undefined;
  /** The amortised-merge tail, a table of its own under {@link TAIL_PREFIX} (it may not exist yet). */
  private tailHandle: LakeTable | undefined;
  /** Checkpoint versions log cleanup found to open (a checkpoint file never changes). */
  private readonly checkpointsOpened = new Set<number>();
  private keepTombstonesMs: number;

  private constructor(storage: Storage, options: LakeTableOptions) {
    this.storage = storage;
    this.name = options.name ?? storage.uri;
    this.scratchDir = options.scratchDir ?? path.join(os.tmpdir(), 'sluice-lake');
    this.maxAttempts = options.maxCommitAttempts ?? 15;
    this.compactionStats = options.compactionStats;
    this.keepTombstonesMs = options.keepTombstonesMs ?? 0;
  }

  /** Keeps tombstones at least `ms` from now on (the tail's handle: as long as its table's). */
  private keepTombstonesAtLeast(ms: number): void {
    this.keepTombstonesMs = Math.max(this.keepTombstonesMs, ms);
  }

  /** How long this handle keeps tombstones: the table's retention, or longer if asked (see {@link LakeTableOptions.keepTombstonesMs}). */
  private tombstoneRetentionMs(configuration: Readonly<Record<string, string>>): number {
    return Math.max(tombstoneRetentionMsOf(configuration), this.keepTombstonesMs);
  }

  /**
   * Creates a table (version 0: protocol (1,2) and metaData). LAKE_TABLE_EXISTS when a table is
   * already there (also when another creator wins the race).
   */
  static async create(storage: Storage, spec: CreateTableSpec, options: LakeTableOptions = {}): Promise<LakeTable> {
    const schema = schemaFromColumns(spec.columns);
    const partitionColumns = [...(spec.partitionColumns ?? [])];
    for (const c of partitionColumns) {
      const f = schema.fields.find((x) => x.name === c);
      if (!f) throw lakeError('LAKE_SCHEMA_INVALID', `partition column ${JSON.stringify(c)} is not a column`);
      if (!isPartitionableType(f.type)) throw lakeError('LAKE_SCHEMA_INVALID', `partition column ${JSON.stringify(c)} must have a primitive, non-binary type`);
    }
    if (new Set(partitionColumns).size !== partitionColumns.length) throw lakeError('LAKE_SCHEMA_INVALID', 'partition columns repeat');
    if (partitionColumns.length === schema.fields.length) throw lakeError('LAKE_SCHEMA_INVALID', 'a table needs at least one non-partition column');
    const configuration = { ...(spec.properties ?? {}) };
    validateProperties(configuration);
    const table = new LakeTable(storage, { ...options, name: options.name ?? spec.name });
    const metaData: MetadataAction = {
      id: randomUUID(),
      name: spec.name ?? null,
      description: spec.description ?? null,
      format: { provider: 'parquet', options: {} },
      schemaString: JSON.stringify(schema),
      partitionColumns,
      configuration,
      createdTime: Date.now(),
    };
    if (await logHasEntries(storage)) {
      throw lakeError('LAKE_TABLE_EXISTS', `a Delta table already exists at ${storage.uri}`, { details: { uri: storage.uri } });
    }
    try {
      await commit(storage, table.name, -1, partitionColumns, {
        operation: 'CREATE TABLE',
        operationParameters: { mode: 'ErrorIfExists', partitionBy: JSON.stringify(partitionColumns) },
        actions: [{ protocol: { minReaderVersion: 1, minWriterVersion: 2 } }, { metaData }],
        isBlindAppend: true,
      }, 1);
    } catch (err) {
      if ((err as { code?: string }).code === 'LAKE_COMMIT_CONFLICT') {
        throw lakeError('LAKE_TABLE_EXISTS', `a Delta table was created concurrently at ${storage.uri}`, { cause: err });
      }
      throw err;
    }
    return table;
  }

  /** Opens an existing table (reads its latest snapshot once to check it is one). */
  static async open(storage: Storage, options: LakeTableOptions = {}): Promise<LakeTable> {
    const snap = await loadSnapshot(storage);
    return new LakeTable(storage, { ...options, name: options.name ?? snap.metadata.name ?? undefined });
  }

  /** A snapshot: latest by default, or `{ version }`, or `{ timestampMs }` (N.json mtimes). */
  async snapshot(target: SnapshotTarget = {}): Promise<Snapshot> {
    if (target.version !== undefined || target.timestampMs !== undefined) return loadSnapshot(this.storage, target);
    // Tombstones past the retention are dropped as the latest snapshot moves on, as a checkpoint
    // drops them: a long-lived handle kept every remove it ever saw (memory and load time grew).
    const snap = this.latest === undefined ? await loadSnapshot(this.storage) : await loadSnapshotAfter(this.storage, this.latest, Date.now() - this.tombstoneRetentionMs(this.latest.configuration));
    // Another table id: the table was created again here, at fewer versions perhaps.
    if (this.latest === undefined || snap.version > this.latest.version || snap.metadata.id !== this.latest.metadata.id) this.latest = snap;
    if (hasSubscribers('tableStats')) publish('tableStats', tableStats(this.name, snap, this.compactionStats));
    return snap;
  }

  /**
   * A DuckDB SELECT over this table's rows at `snapshot` (only the live files `files` keeps), with
   * every column of its schema: the `{ sql }` source of another table's append or MERGE, so rows
   * move table to table inside DuckDB without becoming JS objects. S3 files are fetched into the
   * storage's local cache first; run the write inside the same `FileLease.holding` call, or a
   * full cache may evict them before DuckDB opens them.
   */
  async relationSql(snapshot: Snapshot, files: (file: LiveFile) => boolean = () => true): Promise<string> {
    return filesRelationSql(this.storage, snapshot, snapshot.files.filter(files));
  }

  /**
   * Whether the log holds a version after `version`: one HEAD of the next commit file, no log
   * read. For a process that waits on another writer's commits and polls often.
   */
  async hasVersionAfter(version: number): Promise<boolean> {
    return (await this.storage.head(commitKey(version + 1))) !== undefined;
  }

  /** Latest `txn.version` per appId (exact bigint), from the latest snapshot. */
  async txnVersion(appId: string): Promise<bigint | undefined> {
    return (await this.snapshot()).txnVersion(appId);
  }

  /**
   * Blind append (isBlindAppend:true) of rows as new files, with `txn` actions in the same commit.
   * Never conflicts with other appends; conflicts only when a concurrent commit changed the schema
   * or wrote one of the same txn appIds.
   */
  async append(source: WriteSource, options: AppendOptions = {}): Promise<AppendResult> {
    const started = performance.now();
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    const expectedTxns = checkExpectedTxns(snap, options.expectedTxns, this.name);
    const written = await withConnection(async (conn) => {
      const input = await ingestSource(conn, snap.schema.fields, source, this.scratchDir);
      try {
        return await this.writeFiles(conn, snap, `SELECT * FROM ${input}`, { dataChange: true, sortBy: options.sortBy, maxRowsPerFile: options.maxRowsPerFile, sourceIsTable: true });
      } finally {
        await conn.run(`DROP TABLE IF EXISTS ${input}`);
      }
    });
    const actions: Action[] = [...txnActions(options.txns), ...written.adds.map((add) => ({ add }))];
    if (actions.length === 0) return { version: snap.version, attempts: 0, durationMs: performance.now() - started, rows: 0, filesAdded: 0, bytesWritten: 0 };
    const result = await this.commitAndMaintain(snap, {
      operation: 'WRITE',
      operationParameters: { mode: 'Append', partitionBy: JSON.stringify(snap.partitionColumns) },
      actions,
      isBlindAppend: true,
      expectedTxns,
      extraCommitInfo: { operationMetrics: { numFiles: String(written.adds.length), numOutputRows: String(written.rows), numOutputBytes: String(written.bytes) } },
    });
    return { ...result, durationMs: performance.now() - started, rows: written.rows, filesAdded: written.adds.length, bytesWritten: written.bytes };
  }

  /**
   * Copy-on-write MERGE: upserts batch rows whose version is higher than the stored one, deletes on
   * tombstones, rewriting only files that hold a superseded row. Files are chosen by partition
   * values, then by the cluster column's min/max stats, then by an exact key join on the key and
   * version columns only. `txn` actions go in the same commit. The files it reads stay in an S3
   * file cache until it ends (a `FileLease` of its own): unpinned, they were the first a full
   * cache evicted, before DuckDB opened them.
   */
  merge(spec: MergeSpec): Promise<MergeResult> {
    return FileLease.holding(async () => {
      if (spec.amortise) return this.mergeAmortised(spec, spec.amortise);
      // Rows an earlier amortised merge left pending are newer than the table's: a copy-on-write
      // merge on its own would leave them there for good (a delete here, and the current view
      // still shows the pending version). The batch joins them and all of it folds.
      if (await this.hasPendingTail()) return this.mergeAmortised(spec, { foldAll: true });
      return this.mergeCopyOnWrite(spec);
    });
  }

  /** Whether an amortised-merge tail holds rows not folded into this table yet. */
  private async hasPendingTail(): Promise<boolean> {
    return ((await this.tailSnapshot())?.files.length ?? 0) > 0;
  }

  /** The amortised-merge tail's latest snapshot, or undefined when there is no tail. */
  private async tailSnapshot(): Promise<Snapshot | undefined> {
    try {
      return await this.tail().snapshot();
    } catch (err) {
      if ((err as { code?: string }).code === 'LAKE_NOT_FOUND') return undefined;
      throw err;
    }
  }

  private async mergeCopyOnWrite(spec: MergeSpec): Promise<MergeResult> {
    const started = performance.now();
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    if (snap.configuration[TABLE_PROPERTIES.appendOnly] === 'true') {
      throw lakeError('LAKE_APPEND_ONLY', `${this.name} is append-only (delta.appendOnly=true); MERGE would change data`);
    }
    if (spec.rowOrder) checkSortKeys(spec.rowOrder, snap.schema);
    const expectedTxns = checkExpectedTxns(snap, spec.expectedTxns, this.name);
    const fieldOf = (name: string) => {
      const f = snap.schema.fields.find((x) => x.name === name);
      if (!f) throw lakeError('LAKE_INVALID_INPUT', `merge column ${JSON.stringify(name)} is not a table column`);
      return f;
    };
    if (spec.keys.length === 0) throw lakeError('LAKE_INVALID_INPUT', 'merge needs at least one key column');
    const keyFields = spec.keys.map(fieldOf);
    if (!isIntegerField(fieldOf(spec.versionColumn))) throw lakeError('LAKE_INVALID_INPUT', `version column ${spec.versionColumn} must be an integer column`);
    const clusterField = spec.clusterColumn ? fieldOf(spec.clusterColumn) : isIntegerField(keyFields[0]) ? keyFields[0] : undefined;
    if (clusterField && !isIntegerField(clusterField)) throw lakeError('LAKE_INVALID_INPUT', `cluster column ${clusterField.name} must be an integer column`);
    const deleteColumn = spec.deleteColumn;
    const deleteValue = spec.deleteValue ?? 'delete';
    const batchFields: DeltaField[] = [...snap.schema.fields];
    if (deleteColumn && !batchFields.some((f) => f.name === deleteColumn)) batchFields.push({ name: deleteColumn, type: 'string', nullable: true, metadata: {} });

    const keysEq = (a: string, b: string) => spec.keys.map((k) => `${a}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
    const keyCols = spec.keys.map(ident).join(', ');
    const ver = ident(spec.versionColumn);
    const isDelete = deleteColumn ? `(${ident(deleteColumn)} IS NOT DISTINCT FROM '${deleteValue.replace(/'/g, "''")}')` : 'false';
    const schemaCols = snap.schema.fields.map((f) => ident(f.name)).join(', ');

    const outcome = await withConnection(async (conn) => {
      const input = await ingestSource(conn, batchFields, spec.source, this.scratchDir);
      const id = randomUUID().replace(/-/g, '');
      const batch = `__lake_b_${id}`;
      const matches = `__lake_m_${id}`;
      try {
        await conn.run(`CREATE TEMP TABLE ${batch} AS SELECT *, ${isDelete} AS __del FROM ${input} QUALIFY row_number() OVER (PARTITION BY ${keyCols} ORDER BY ${ver} DESC) = 1`);
        const nullVersions = Number((await conn.runAndReadAll(`SELECT count(*) FROM ${batch} WHERE ${ver} IS NULL OR ${spec.keys.map((k) => `${ident(k)} IS NULL`).join(' OR ')}`)).getRows()[0][0]);
        if (nullVersions > 0) throw lakeError('LAKE_INVALID_INPUT', `${nullVersions} batch row(s) have a null key or version`);
        const candidates = await this.mergeCandidates(conn, snap, batch, clusterField);
        const readPartitions = new Set(candidates.partitions);
        // Phase A: key and version columns of candidate files joined with the batch.
        const keyRel = candidates.files.length
          ? await filesRelationSql(this.storage, snap, candidates.files, { columns: [...new Set([...spec.keys, spec.versionColumn])], fileColumn: '__file' })
          : `SELECT ${[...spec.keys, spec.versionColumn].map((k) => `NULL::${duckOf(snap.schema, k)} AS ${ident(k)}`).join(', ')}, NULL::VARCHAR AS __file WHERE false`;
        try {
          await conn.run(
            `CREATE TEMP TABLE ${matches} AS SELECT ${spec.keys.map((k) => `b.${ident(k)}`).join(', ')}, o.__file, o.${ver} AS __old_ver, b.${ver} AS __new_ver, b.__del
             FROM (${keyRel}) o JOIN ${batch} b ON ${keysEq('o', 'b')}`,
          );
        } catch (err) {
          throw translateReadError(`${this.name}: merge scan`, err);
        }
        const touchedKeys = new Set(
          (await conn.runAndReadAll(`SELECT DISTINCT __file FROM ${matches} WHERE __new_ver > __old_ver`)).getRows().map((r) => String(r[0])),
        );
        const touched = candidates.files.filter((f) => touchedKeys.has(f.key));
        const counts = (
          await conn.runAndReadAll(
            `SELECT
               count(*) FILTER (WHERE NOT b.__del AND NOT EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'b')})),
               count(*) FILTER (WHERE NOT b.__del AND EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'b')}) AND NOT EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'b')} AND m.__old_ver >= b.${ver})),
               count(*) FILTER (WHERE b.__del AND EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'b')} AND m.__old_ver < b.${ver}))
             FROM ${batch} b`,
          )
        ).getRows()[0].map(Number);
        const [inserted, updated, deleted] = counts;
        let adds: AddAction[] = [];
        let bytesWritten = 0;
        if (touched.length > 0 || inserted + updated > 0) {
          const fullRel = touched.length ? await filesRelationSql(this.storage, snap, touched, { fileColumn: '__file' }) : undefined;
          const kept = fullRel
            ? `SELECT ${schemaCols} FROM (${fullRel}) o WHERE NOT EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'o')} AND m.__file = o.__file AND m.__new_ver > m.__old_ver)`
            : undefined;
          const winners = `SELECT ${schemaCols} FROM ${batch} b WHERE NOT b.__del AND NOT EXISTS (SELECT 1 FROM ${matches} m WHERE ${keysEq('m', 'b')} AND m.__old_ver >= b.${ver})`;
          try {
            const written = await this.writeFiles(conn, snap, kept ? `${kept} UNION ALL ${winners}` : winners, {
              dataChange: true,
              sortBy: clusterField ? [clusterField.name] : undefined,
              rowOrder: spec.rowOrder,
              maxRowsPerFile: spec.maxRowsPerFile,
            });
            adds = written.adds;
            bytesWritten = written.bytes;
          } catch (err) {
            throw (err as { code?: string }).code ? err : translateReadError(`${this.name}: merge rewrite`, err);
          }
        }
        return { candidates: candidates.files, touched, adds, bytesWritten, inserted, updated, deleted, readPartitions };
      } finally {
        for (const t of [input, batch, matches]) await conn.run(`DROP TABLE IF EXISTS ${t}`);
      }
    });

    const now = Date.now();
    const actions: Action[] = [
      ...txnActions(spec.txns),
      ...outcome.touched.map((f) => ({ remove: removeOf(f, now, true) })),
      ...outcome.adds.map((add) => ({ add })),
    ];
    const base = {
      filesRead: outcome.candidates.length,
      bytesRead: sum(outcome.candidates.map((f) => f.size)),
      filesRewritten: outcome.touched.length,
      bytesRewritten: sum(outcome.touched.map((f) => f.size)),
      filesAdded: outcome.adds.length,
      bytesWritten: outcome.bytesWritten,
      rowsInserted: outcome.inserted,
      rowsUpdated: outcome.updated,
      rowsDeleted: outcome.deleted,
    };
    if (actions.length === 0) return { version: undefined, ...base, durationMs: performance.now() - started };
    const result = await this.commitAndMaintain(snap, {
      operation: 'MERGE',
      operationParameters: { predicate: JSON.stringify({ keys: spec.keys, version: spec.versionColumn }) },
      actions,
      isBlindAppend: false,
      expectedTxns,
      readPartitions: outcome.readPartitions,
      readFiles: new Set(outcome.candidates.map((f) => f.path)),
      extraCommitInfo: {
        operationMetrics: {
          numTargetFilesAdded: String(base.filesAdded),
          numTargetFilesRemoved: String(base.filesRewritten),
          numTargetRowsInserted: String(base.rowsInserted),
          numTargetRowsUpdated: String(base.rowsUpdated),
          numTargetRowsDeleted: String(base.rowsDeleted),
        },
      },
    });
    const durationMs = performance.now() - started;
    publish('merge', { table: this.name, version: result.version, filesRead: base.filesRead, bytesRead: base.bytesRead, filesRewritten: base.filesRewritten, bytesRewritten: base.bytesRewritten, durationMs });
    return { version: result.version, ...base, durationMs };
  }

  /**
   * Bin-packs files smaller than `smallFileBytes` (default the target) in each partition into
   * files of about the target size (dataChange=false on adds and removes, so streaming readers
   * skip it). Never conflicts with appends; conflicts with a concurrent commit that removed one
   * of its files.
   */
  async compact(options: CompactOptions = {}): Promise<CompactResult> {
    const started = performance.now();
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    if (options.sortBy) checkSortKeys(options.sortBy, snap.schema);
    const target = options.targetFileBytes ?? DEFAULT_TARGET_FILE_BYTES;
    const small = Math.min(options.smallFileBytes ?? target, target);
    const groups = new Map<string, LiveFile[]>();
    for (const f of snap.files) {
      if (f.size >= small) continue;
      if (options.partition && Object.entries(options.partition).some(([k, v]) => (f.partitionValues[k] ?? null) !== v)) continue;
      const k = JSON.stringify(snap.partitionColumns.map((c) => f.partitionValues[c] ?? null));
      const group = groups.get(k);
      if (group) group.push(f);
      else groups.set(k, [f]);
    }
    const bins: LiveFile[][] = [];
    for (const files of groups.values()) {
      // First-fit decreasing into bins of at most `target` bytes; a bin of one file is left alone.
      const open: { files: LiveFile[]; bytes: number }[] = [];
      for (const f of [...files].sort((a, b) => b.size - a.size)) {
        const bin = open.find((b) => b.bytes + f.size <= target);
        if (bin) {
          bin.files.push(f);
          bin.bytes += f.size;
        } else open.push({ files: [f], bytes: f.size });
      }
      for (const b of open) if (b.files.length > 1) bins.push(b.files);
    }
    if (bins.length === 0) return { version: undefined, filesRemoved: 0, bytesRemoved: 0, filesAdded: 0, bytesAdded: 0, durationMs: performance.now() - started };
    const adds: AddAction[] = [];
    let bytesAdded = 0;
    await withConnection(async (conn) => {
      for (const bin of bins) {
        try {
          // Each bin's inputs stay in an S3 file cache while it is rewritten (a lease per bin: one
          // for the whole pass would hold every bin's inputs until the last).
          const out = await FileLease.holding(() => compactBin(conn, this.storage, snap, bin, { scratchDir: this.scratchDir, sortBy: options.sortBy, layout: parquetLayoutOf(snap.configuration) }));
          adds.push(out.add);
          bytesAdded += out.bytes;
        } catch (err) {
          throw (err as { code?: string }).code ? err : translateReadError(`${this.name}: compaction`, err);
        }
        options.onFileWritten?.();
      }
    });
    const removed = bins.flat();
    const now = Date.now();
    const result = await this.commitAndMaintain(snap, {
      operation: 'OPTIMIZE',
      operationParameters: { targetSize: String(target), predicate: JSON.stringify(options.partition ?? {}) },
      actions: [...removed.map((f) => ({ remove: removeOf(f, now, false) })), ...adds.map((add) => ({ add }))],
      isBlindAppend: false,
      readFiles: new Set(removed.map((f) => f.path)),
    });
    const out = {
      version: result.version,
      filesRemoved: removed.length,
      bytesRemoved: sum(removed.map((f) => f.size)),
      filesAdded: adds.length,
      bytesAdded,
      durationMs: performance.now() - started,
    };
    publish('compaction', { table: this.name, ...out });
    return out;
  }

  /**
   * Deletes data files the latest snapshot does not reference and that have been unreferenced
   * for longer than the retention (tombstone time, else file mtime). Never touches `_delta_log`
   * or other paths with a segment starting with `_` or `.` (except `name=value` partition dirs).
   */
  async vacuum(options: VacuumOptions = {}): Promise<VacuumResult> {
    const started = performance.now();
    const snap = await this.snapshot();
    // A feature this library does not know may reference files it would take as unreferenced (deletion vectors).
    checkWritable(snap, this.name);
    const now = options.nowMs ?? Date.now();
    const retention = options.retentionMs ?? fileRetentionMsOf(snap.configuration);
    if (!(retention >= MIN_VACUUM_RETENTION_MS) && !options.unsafeShortRetention) {
      throw lakeError(
        'LAKE_INVALID_INPUT',
        `vacuum of ${this.name}: a retention of ${retention} ms is under the minimum of ${MIN_VACUUM_RETENTION_MS} ms; files a writer has not committed yet or a reader still reads would go (set unsafeShortRetention only when nothing uses the table)`,
        { details: { retentionMs: retention, minimumMs: MIN_VACUUM_RETENTION_MS } },
      );
    }
    // Past the tombstones' own retention a checkpoint drops them, and a file removed since then
    // would be judged by its write time alone: deleted inside the window asked for.
    const tombstonesKeptMs = this.tombstoneRetentionMs(snap.configuration);
    if (retention > tombstonesKeptMs) {
      throw lakeError(
        'LAKE_INVALID_INPUT',
        `vacuum of ${this.name}: a retention of ${retention} ms is longer than the ${tombstonesKeptMs} ms this handle keeps tombstones; files removed inside it could not be told from old ones (open the table with keepTombstonesMs ≥ the retention, or raise ${TABLE_PROPERTIES.deletedFileRetentionDuration})`,
        { details: { retentionMs: retention, tombstoneRetentionMs: tombstonesKeptMs } },
      );
    }
    const cutoff = now - retention;
    const live = new Set(snap.files.map((f) => f.key));
    const tombstoneTime = new Map<string, number>();
    for (const r of snap.tombstones) {
      // A remove without the optional deletionTimestamp (another writer's) tells no time: the
      // file's own modification time decides, as for a file never named by the log.
      if (r.deletionTimestamp === undefined || r.deletionTimestamp === null) continue;
      try {
        tombstoneTime.set(decodeURIComponent(r.path), Number(r.deletionTimestamp));
      } catch {
        // an undecodable tombstone path names no file we could delete
      }
    }
    // The log (a month of commits at one a second is 2.6M keys) and the tail (vacuumed as a
    // table of its own below) hold nothing this vacuum deletes.
    const objects = await this.storage.list('', { exclude: ['_delta_log/', TAIL_PREFIX] });
    const doomed = objects.filter((o) => {
      if (live.has(o.key) || isHiddenKey(o.key)) return false;
      // Both must be past the cutoff (as Spark's vacuum): a tombstone time older than the file
      // itself (a skewed writer clock, or 0) must not delete a file written moments ago.
      const since = Math.max(tombstoneTime.get(o.key) ?? -Infinity, o.modifiedMs);
      return since < cutoff;
    });
    if (!options.dryRun) await this.storage.delete(doomed.map((o) => o.key));
    const tail = await this.vacuumTail(options, retention);
    const result = { filesDeleted: [...doomed.map((o) => o.key), ...tail.keys], bytesDeleted: sum(doomed.map((o) => o.size)) + tail.bytes, durationMs: performance.now() - started };
    publish('vacuum', { table: this.name, filesDeleted: result.filesDeleted.length, bytesDeleted: result.bytesDeleted, durationMs: result.durationMs });
    return result;
  }

  private async vacuumTail(options: VacuumOptions, retentionMs: number): Promise<{ keys: string[]; bytes: number }> {
    const tail = this.tail();
    if ((await tail.storage.list('_delta_log/', { limit: 1 })).length === 0) return { keys: [], bytes: 0 };
    // The tail table has no retention property of its own: it keeps tombstones as long as this one.
    tail.keepTombstonesAtLeast(retentionMs);
    const r = await tail.vacuum({ ...options, retentionMs });
    return { keys: r.filesDeleted.map((key) => TAIL_PREFIX + key), bytes: r.bytesDeleted };
  }

  /** Writes a classic checkpoint of `version` (default latest) and `_last_checkpoint`; every 10th checkpoint also cleans old log files. */
  async checkpoint(version?: number): Promise<{ version: number; rows: number; bytes: number }> {
    const started = performance.now();
    const snap = await this.snapshot(version === undefined ? {} : { version });
    // The checkpoint carries the protocol and the actions this library knows, nothing else.
    checkWritable(snap, this.name);
    const retention = this.tombstoneRetentionMs(snap.configuration);
    const out = await writeCheckpoint(this.storage, snap, this.scratchDir, Date.now() - retention);
    publish('checkpoint', { table: this.name, version: snap.version, rows: out.rows, bytes: out.bytes, durationMs: performance.now() - started });
    // Every 10th checkpoint is often enough for log cleanup.
    if (snap.version % (checkpointIntervalOf(snap.configuration) * 10) === 0) await this.cleanupLog();
    return { version: snap.version, ...out };
  }

  /**
   * Deletes commits and checkpoints older than the newest checkpoint that is itself older than
   * `delta.logRetentionDuration` (default 30 days), so time travel keeps working inside it.
   */
  async cleanupLog(options: { retentionMs?: number; nowMs?: number } = {}): Promise<{ filesDeleted: number }> {
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    const configured = snap.configuration[TABLE_PROPERTIES.logRetentionDuration];
    const retention = options.retentionMs ?? (configured ? intervalMsOf(configured) : DEFAULT_LOG_RETENTION_MS);
    // A retention another writer set in a form this library cannot read: keep the whole log.
    if (retention === undefined) return { filesDeleted: 0 };
    const cutoff = (options.nowMs ?? Date.now()) - retention;
    const objects = await listLogToCutoff(this.storage, cutoff, snap.version);
    const cps = objects
      .map((o) => ({ o, m: /^_delta_log\/(\d{20})\.checkpoint\.parquet$/.exec(o.key) }))
      .filter((x) => x.m && x.o.modifiedMs < cutoff)
      .map((x) => Number(x.m![1]));
    const horizon = await this.newestOpeningCheckpoint(cps);
    if (horizon === undefined) return { filesDeleted: 0 };
    const doomed = objects
      .filter((o) => {
        const m = /^_delta_log\/(\d{20})\.(json|crc|checkpoint(\.\d+\.\d+)?\.parquet)$/.exec(o.key);
        return m !== null && Number(m[1]) < horizon;
      })
      .map((o) => o.key);
    await this.storage.delete(doomed);
    return { filesDeleted: doomed.length };
  }

  /**
   * The newest of `versions` whose classic checkpoint opens, if any: log cleanup deletes below it,
   * and one torn by a writer outside the protocol would have left nothing to replay the table
   * from (readers fall back to the checkpoint before it, or version 0, which cleanup deleted).
   * Each is opened once per handle (a checkpoint file never changes).
   */
  private async newestOpeningCheckpoint(versions: readonly number[]): Promise<number | undefined> {
    for (const v of [...versions].sort((a, b) => b - a)) {
      if (this.checkpointsOpened.has(v) || (await checkpointOpens(this.storage, [checkpointKey(v)]))) {
        this.checkpointsOpened.add(v);
        return v;
      }
    }
    return undefined;
  }

  /**
   * Schema evolution: adds nullable columns at the end (a metadata-only commit; files written
   * before read them as null). Conflicts with any concurrent commit.
   */
  async addColumns(columns: readonly ColumnSpec[]): Promise<CommitResult> {
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    for (const c of columns) {
      if (c.nullable === false) throw lakeError('LAKE_SCHEMA_INVALID', `added column ${JSON.stringify(c.name)} must be nullable (old files have no values)`);
    }
    const schema: TableSchema = {
      type: 'struct',
      fields: [...snap.schema.fields, ...columns.map((c) => ({ name: c.name, type: c.type, nullable: true, metadata: {} }))],
    };
    validateSchema(schema);
    const metaData: MetadataAction = { ...snap.metadata, schemaString: JSON.stringify(schema) };
    return this.commitAndMaintain(snap, { operation: 'ADD COLUMNS', operationParameters: { columns: JSON.stringify(columns.map((c) => c.name)) }, actions: [{ metaData }], isBlindAppend: false, readPartitions: 'all' });
  }

  /** Commit provenance, newest first (versions whose commit files still exist). */
  async history(limit = Infinity): Promise<HistoryEntry[]> {
    const listing = await listLog(this.storage);
    const stamps = commitTimestamps(listing).reverse().slice(0, limit);
    return Promise.all(
      stamps.map(async ({ version, timestampMs }) => {
        const c = parseCommit(version, commitKey(version), await this.storage.get(commitKey(version)));
        return { version, timestampMs, operation: c.commitInfo?.operation as string | undefined, commitInfo: c.commitInfo };
      }),
    );
  }

  /**
   * A consistent read of current state for {@link LakeQueryEngine.open}: this table's snapshot plus
   * the amortised-merge tail when there is one (tail read first: a fold commits here before it
   * removes tail files, so rows are seen twice at worst, and version ordering resolves that).
   */
  async currentView(): Promise<ViewSpec> {
    const tail = await this.tailSnapshot();
    const snapshot = await this.snapshot();
    if (!tail) return { storage: this.storage, snapshot };
    if (tail.files.length === 0) return { storage: this.storage, snapshot, tailVersion: tail.version };
    const c = tail.configuration;
    return {
      storage: this.storage,
      snapshot,
      tailVersion: tail.version,
      pending: {
        storage: this.tail().storage,
        snapshot: tail,
        keys: JSON.parse(c[TAIL_PROPERTIES.keys]) as string[],
        versionColumn: c[TAIL_PROPERTIES.version],
        deleteColumn: c[TAIL_PROPERTIES.deleteColumn] || undefined,
        deleteValue: c[TAIL_PROPERTIES.deleteValue] ?? 'delete',
      },
    };
  }

  private async mergeAmortised(spec: MergeSpec, options: AmortiseOptions): Promise<MergeResult> {
    const started = performance.now();
    const snap = await this.snapshot();
    checkWritable(snap, this.name);
    if (snap.configuration[TABLE_PROPERTIES.appendOnly] === 'true') {
      throw lakeError('LAKE_APPEND_ONLY', `${this.name} is append-only (delta.appendOnly=true); MERGE would change data`);
    }
    checkExpectedTxns(snap, spec.expectedTxns, this.name); // before the tail grows; the inner merge re-checks
    const tail = await this.tailTable(snap, spec);
    await tail.append(spec.source);
    const tsnap = await tail.snapshot();
    const pkey = (f: LiveFile) => JSON.stringify(snap.partitionColumns.map((c) => f.partitionValues[c] ?? null));
    const silverRows = new Map<string, number>();
    for (const f of snap.files) silverRows.set(pkey(f), (silverRows.get(pkey(f)) ?? 0) + (snap.stats(f)?.numRecords ?? Infinity));
    const pending = new Map<string, { rows: number; files: LiveFile[] }>();
    for (const f of tsnap.files) {
      const p = pending.get(pkey(f)) ?? { rows: 0, files: [] };
      p.rows += tsnap.stats(f)?.numRecords ?? Infinity; // unknown counts fold rather than pile up
      p.files.push(f);
      pending.set(pkey(f), p);
    }
    // Keep the whole tail under foldFraction of the table: fold the partitions whose pending
    // share of their own rows is highest (most pending retired per row rewritten) until it is.
    // In steady state partitions fold at about twice the average pending share, so each event
    // costs ~1/(2·foldFraction) rewritten rows whatever the table size (ADR 0001).
    const fraction = options.foldFraction ?? 0.1;
    const tableRows = [...silverRows.values()].reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
    const cap = Math.max(options.minPendingRows ?? 0, fraction * tableRows);
    let pendingTotal = [...pending.values()].reduce((a, p) => a + p.rows, 0);
    const byShare = [...pending].sort(([ka, a], [kb, b]) => b.rows / Math.max(1, silverRows.get(kb) ?? 0) - a.rows / Math.max(1, silverRows.get(ka) ?? 0));
    const folding: typeof byShare = [];
    for (const entry of byShare) {
      if (!options.foldAll && pendingTotal <= cap) break;
      folding.push(entry);
      pendingTotal -= entry[1].rows;
    }
    const foldFiles = folding.flatMap(([, p]) => p.files);
    const inner: MergeSpec = { ...spec, amortise: undefined };
    let result: MergeResult;
    if (foldFiles.length > 0) {
      const rel = await filesRelationSql(tail.storage, tsnap, foldFiles);
      result = await this.mergeCopyOnWrite({ ...inner, source: { sql: rel } });
      const now = Date.now();
      // Through the tail's own maintenance: a fold's DELETE that lands on a checkpoint version
      // checkpoints the tail like any other commit (a tail folded every step had none).
      await tail.commitAndMaintain(tsnap, {
        operation: 'DELETE',
        operationParameters: { predicate: 'folded' },
        actions: foldFiles.map((f) => ({ remove: removeOf(f, now, true) })),
        isBlindAppend: false,
        readFiles: new Set(foldFiles.map((f) => f.path)),
      });
    } else if (spec.txns?.length) {
      result = await this.mergeCopyOnWrite({ ...inner, source: { rows: [] } });
    } else {
      result = { version: undefined, filesRead: 0, bytesRead: 0, filesRewritten: 0, bytesRewritten: 0, filesAdded: 0, bytesWritten: 0, rowsInserted: 0, rowsUpdated: 0, rowsDeleted: 0, durationMs: 0 };
    }
    const pendingRows = [...pending].filter(([k]) => !folding.some(([f]) => f === k)).reduce((n, [, p]) => n + p.rows, 0);
    return { ...result, foldedPartitions: folding.length, pendingRows, durationMs: performance.now() - started };
  }

  /** The tail's table handle, made once (it keeps its own latest snapshot). */
  private tail(): LakeTable {
    this.tailHandle ??= new LakeTable(new PrefixedStorage(this.storage, TAIL_PREFIX), {
      scratchDir: this.scratchDir,
      maxCommitAttempts: this.maxAttempts,
      name: `${this.name}#tail`,
      // Folds drain a tail; compaction never works on one: none of its files is compaction's work.
      compactionStats: { smallFileBytes: 0, minSmallFiles: Infinity },
      keepTombstonesMs: this.keepTombstonesMs,
    });
    return this.tailHandle;
  }

  /** The amortised-merge tail, created when missing, with its columns kept in step with this table. */
  private async tailTable(snap: Snapshot, spec: MergeSpec): Promise<LakeTable> {
    const tail = this.tail();
    tail.keepTombstonesAtLeast(this.tombstoneRetentionMs(snap.configuration));
    const extra: ColumnSpec[] = spec.deleteColumn && !snap.schema.fields.some((f) => f.name === spec.deleteColumn) ? [{ name: spec.deleteColumn, type: 'string' }] : [];
    const wanted: ColumnSpec[] = [...snap.schema.fields.map((f) => ({ name: f.name, type: f.type, nullable: true })), ...extra];
    let tailSnap: Snapshot;
    try {
      tailSnap = await tail.snapshot();
    } catch (err) {
      if ((err as { code?: string }).code !== 'LAKE_NOT_FOUND') throw err;
      try {
        await LakeTable.create(tail.storage, {
          columns: wanted,
          partitionColumns: snap.partitionColumns,
          properties: {
            [TAIL_PROPERTIES.keys]: JSON.stringify(spec.keys),
            [TAIL_PROPERTIES.version]: spec.versionColumn,
            [TAIL_PROPERTIES.deleteColumn]: spec.deleteColumn ?? '',
            [TAIL_PROPERTIES.deleteValue]: spec.deleteValue ?? 'delete',
          },
        });
      } catch (createErr) {
        if ((createErr as { code?: string }).code !== 'LAKE_TABLE_EXISTS') throw createErr;
      }
      tailSnap = await tail.snapshot();
    }
    const have = new Set(tailSnap.schema.fields.map((f) => f.name));
    const missing = wanted.filter((c) => !have.has(c.name));
    if (missing.length > 0) await tail.addColumns(missing);
    return tail;
  }

  private async writeFiles(
    conn: DuckDBConnection,
    snap: Snapshot,
    sourceSql: string,
    o: { dataChange: boolean; sortBy?: readonly string[]; rowOrder?: readonly SortKey[]; maxRowsPerFile?: number; sourceIsTable?: boolean },
  ) {
    return writeDataFiles({
      conn,
      storage: this.storage,
      schema: snap.schema,
      partitionColumns: snap.partitionColumns,
      sourceSql,
      sourceIsTable: o.sourceIsTable,
      dataChange: o.dataChange,
      sortBy: o.sortBy,
      rowOrder: o.rowOrder,
      maxRowsPerFile: o.maxRowsPerFile,
      layout: parquetLayoutOf(snap.configuration),
      scratchDir: this.scratchDir,
    });
  }

  /** Partition- and stats-pruned candidate files for a merge batch. */
  private async mergeCandidates(conn: DuckDBConnection, snap: Snapshot, batch: string, clusterField: DeltaField | undefined) {
    const pFields = snap.partitionColumns.map((c) => snap.schema.fields.find((f) => f.name === c)!);
    const pExprs = pFields.map((f) => partitionValueSql(ident(f.name), f.type));
    const clusterExpr = clusterField ? `CAST(${ident(clusterField.name)} AS VARCHAR)` : 'NULL';
    const rows = (
      await conn.runAndReadAll(`SELECT ${pExprs.length ? pExprs.map((e, i) => `${e} AS __p${i}`).join(', ') + ', ' : ''}list(DISTINCT ${clusterExpr}) FROM ${batch} GROUP BY ALL`)
    ).getRows();
    // Per partition the batch's cluster values, or 'all' when one of them is null: a stored row of
    // the same key with a null cluster value lies in a file whose range says nothing about it
    // (skipping that file inserted the key a second time).
    const valuesByPartition = new Map<string, bigint[] | 'all'>();
    for (const r of rows) {
      const key = JSON.stringify(pFields.map((_, i) => (r[i] === null ? null : String(r[i]))));
      const list = r[pFields.length] as { items?: unknown[] } | unknown[] | null;
      const items = Array.isArray(list) ? list : ((list as { items?: unknown[] })?.items ?? []);
      if (items.some((v) => v === null)) valuesByPartition.set(key, 'all');
      else valuesByPartition.set(key, items.map((v) => BigInt(String(v))).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    const files = snap.files.filter((f) => {
      const key = JSON.stringify(snap.partitionColumns.map((c) => f.partitionValues[c] ?? null));
      const values = valuesByPartition.get(key);
      if (!values) return false;
      if (!clusterField || values === 'all') return true;
      const stats = snap.stats(f);
      const lo = stats?.minValues?.[clusterField.name];
      const hi = stats?.maxValues?.[clusterField.name];
      if (!isIntegral(lo) || !isIntegral(hi)) return true; // no usable stats: must read it
      return anyInRange(values, BigInt(lo), BigInt(hi));
    });
    return { files, partitions: [...valuesByPartition.keys()] };
  }

  private async commitAndMaintain(snap: Snapshot, plan: CommitPlan): Promise<CommitResult> {
    const result = await commit(this.storage, this.name, snap.version, snap.partitionColumns, plan, this.maxAttempts);
    if (result.version > 0 && result.version % checkpointIntervalOf(snap.configuration) === 0) {
      // A failed checkpoint never fails the commit that landed: readers replay more JSON until
      // the next one. It is published, so a run of failures (a log that keeps growing) shows.
      await this.checkpoint(result.version).catch((err: unknown) => {
        publish('checkpointFailed', { table: this.name, version: result.version, code: typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'UNKNOWN', message: errorMessage(err) });
      });
    }
    return result;
  }
}

function tableStats(table: string, snap: Snapshot, limits: { smallFileBytes: number; minSmallFiles: number } = DEFAULT_COMPACTION_STATS): TableStatsEvent {
  const small = snap.files.filter((f) => f.size < limits.smallFileBytes);
  const perPartition = new Map<string, number>();
  for (const f of small) {
    const k = JSON.stringify(snap.partitionColumns.map((c) => f.partitionValues[c] ?? null));
    perPartition.set(k, (perPartition.get(k) ?? 0) + 1);
  }
  const backlog = [...perPartition.values()].filter((n) => n >= limits.minSmallFiles).reduce((a, b) => a + b, 0);
  return { table, version: snap.version, committedAtMs: snap.timestampMs, files: snap.files.length, smallFiles: small.length, compactionBacklog: backlog };
}

function txnActions(txns: readonly TxnSpec[] | undefined): Action[] {
  const now = Date.now();
  const seen = new Set<string>();
  return (txns ?? []).map((t) => {
    if (typeof t.appId !== 'string' || t.appId === '') throw lakeError('LAKE_INVALID_INPUT', 'txn appId must be a non-empty string');
    if (seen.has(t.appId)) throw lakeError('LAKE_INVALID_INPUT', `txn appId ${JSON.stringify(t.appId)} given twice in one commit`);
    seen.add(t.appId);
    const version = typeof t.version === 'bigint' ? (t.version >= BigInt(Number.MIN_SAFE_INTEGER) && t.version <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(t.version) : t.version) : t.version;
    if (typeof version === 'number' && !Number.isSafeInteger(version)) throw lakeError('LAKE_INVALID_INPUT', `txn version for ${t.appId} must be an integer (use bigint beyond 2^53)`);
    const txn: TxnAction = { appId: t.appId, version, lastUpdated: now };
    return { txn };
  });
}

/**
 * Normalises `expected` and throws LAKE_TXN_MISMATCH when `snap` contradicts it; returns what the
 * commit re-checks against winners (undefined when nothing is expected).
 */
function checkExpectedTxns(snap: Snapshot, expected: Readonly<Record<string, bigint | number | null>> | undefined, table: string): Map<string, bigint | null> | undefined {
  if (expected === undefined) return undefined;
  const wanted = new Map<string, bigint | null>();
  for (const [appId, v] of Object.entries(expected)) {
    if (v !== null && typeof v !== 'bigint' && !Number.isSafeInteger(v)) throw lakeError('LAKE_INVALID_INPUT', `expected txn version for ${appId} must be an integer, a bigint or null`);
    wanted.set(appId, v === null ? null : BigInt(v));
  }
  for (const [appId, want] of wanted) {
    const actual = snap.txnVersion(appId) ?? null;
    if (actual !== want) {
      throw lakeError('LAKE_TXN_MISMATCH', `${table}: expected txn ${JSON.stringify(appId)} at ${String(want)} but version ${snap.version} has ${String(actual)}`, {
        details: { readVersion: snap.version, appId, expected: String(want), actual: String(actual) },
      });
    }
  }
  return wanted;
}

function removeOf(f: LiveFile, now: number, dataChange: boolean): RemoveAction {
  return { path: f.path, deletionTimestamp: now, dataChange, extendedFileMetadata: true, partitionValues: { ...f.partitionValues }, size: f.size };
}

function isHiddenKey(key: string): boolean {
  const parts = key.split('/');
  return parts.some((p, i) => (p.startsWith('_') || p.startsWith('.')) && !(i < parts.length - 1 && p.includes('=') && p !== '_delta_log'));
}

function isIntegerField(f: DeltaField): boolean {
  return f.type === 'long' || f.type === 'integer' || f.type === 'short' || f.type === 'byte';
}

function isIntegral(v: unknown): v is number | bigint {
  return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
}

function anyInRange(sorted: readonly bigint[], lo: bigint, hi: bigint): boolean {
  let a = 0;
  let b = sorted.length;
  while (a < b) {
    const mid = (a + b) >> 1;
    if (sorted[mid] < lo) a = mid + 1;
    else b = mid;
  }
  return a < sorted.length && sorted[a] <= hi;
}

function sum(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

function duckOf(schema: TableSchema, name: string): string {
  return duckType(schema.fields.find((x) => x.name === name)!.type);
}
