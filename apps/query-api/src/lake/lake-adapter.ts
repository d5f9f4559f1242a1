import { isSluiceError, SluiceError } from '@sluice/errors';
import { type LakeQueryEngine, LakeTable, type Storage, TAIL_PREFIX, type ViewSpec } from '@sluice/lake';
import { queryError } from '../errors';
import { ByteBudget } from '../limits/byte-budget';
import { timeLeft } from '../limits/time-left';
import type { LakePort, LakeRead, LiveFile, TableSnapshot } from './lake-port';

/** How the adapter reaches the tables. */
export interface LakeAdapterOptions {
  /** Table names served; each one's storage comes from `storageFor`. */
  tables: readonly string[];
  storageFor(table: string): Storage;
  /** A locked-down engine (`LakeQueryEngine.create({ locked: true, … })`), owned by the caller. */
  engine: LakeQueryEngine;
  /** Immutable past snapshots kept for time travel (by table and version). */
  pastSnapshots?: number;
  /**
   * Most bytes of data files the reads of one table may be handed together. A read larger than
   * that alone is refused with QUERY_TOO_COMPLEX before anything is fetched; the others wait for
   * their turn ({@link ByteBudget}). S3 tables: what a table's file cache can pin
   * (`PINNED_OVERSHOOT` × its size). Past that, the cache evicted the reads' oldest files before
   * DuckDB opened them and a read failed as if they had been vacuumed. None by default.
   */
  maxReadBytes?: number;
}

const RELATION = 'lake_snapshot';
/** How long a read without a timeout of its own waits for its turn in the table's read budget. */
const DEFAULT_BUDGET_WAIT_MS = 30_000;

/**
 * query-api's LakePort over @sluice/lake: snapshots from the Delta log, SQL through a locked
 * DuckDB session whose only view is the chosen files of one snapshot. Translates lake errors into
 * query-api's catalog (the one translation point for them).
 */
export class LakeAdapter implements LakePort {
  readonly relation = RELATION;
  private readonly storages = new Map<string, Storage>();
  private readonly opened = new Map<string, LakeTable>();
  private readonly sources = new WeakMap<TableSnapshot, ViewSpec>();
  private readonly past = new Map<string, TableSnapshot>();
  private readonly pastLimit: number;
  private readonly budgets = new Map<string, ByteBudget>();

  constructor(private readonly options: LakeAdapterOptions) {
    for (const t of options.tables) this.storages.set(t, options.storageFor(t));
    this.pastLimit = options.pastSnapshots ?? 32;
  }

  tables(): string[] {
    return [...this.options.tables];
  }

  latest(table: string): Promise<TableSnapshot> {
    return this.load(table, 'current');
  }

  async atVersion(table: string, version: number): Promise<TableSnapshot> {
    // A version never changes once committed, so a loaded one is good for as long as it is kept.
    const key = `${table}@${version}`;
    const hit = this.past.get(key);
    // Kept only while it is the table's: one dropped and created again since has other versions.
    if (hit && (await this.sameTable(hit))) return hit;
    const s = await this.load(table, { version });
    this.past.set(key, s);
    if (this.past.size > this.pastLimit) this.past.delete(this.past.keys().next().value as string);
    return s;
  }

  async changedSince(snapshot: TableSnapshot): Promise<boolean> {
    const storage = this.storages.get(snapshot.table);
    if (!storage) return true;
    try {
      // The tail's next commit is a change; without a tail at load time, its creation is. A tail
      // emptied by a fold has a version but no pending rows: counting from 0 then made every
      // check find a change, and the table was reloaded every 250 ms.
      const tailNext = snapshot.tailVersion === undefined ? 0 : snapshot.tailVersion + 1;
      const [next, tail, own] = await Promise.all([
        storage.head(commitKey(snapshot.version + 1)),
        storage.head(TAIL_PREFIX + commitKey(tailNext)),
        storage.head(commitKey(snapshot.version)),
      ]);
      return next !== undefined || tail !== undefined || !isOwnCommit(own, snapshot);
    } catch {
      return true; // let the full reload report the storage problem
    }
  }

  /** Whether `snapshot`'s own commit is still the one it was loaded from (see {@link isOwnCommit}). */
  private async sameTable(snapshot: TableSnapshot): Promise<boolean> {
    const storage = this.storages.get(snapshot.table);
    const own = await storage?.head(commitKey(snapshot.version)).catch(() => undefined);
    return isOwnCommit(own, snapshot);
  }

  atTimestamp(table: string, ms: number): Promise<TableSnapshot> {
    return this.load(table, { timestampMs: ms });
  }

  async query(snapshot: TableSnapshot, files: LiveFile[], pendingFiles: LiveFile[], read: LakeRead): Promise<Record<string, unknown>[]> {
    const source = this.sources.get(snapshot);
    if (!source) throw queryError('QUERY_INTERNAL', 'snapshot was not loaded by this adapter');
    const waitStarted = performance.now();
    const release = await this.readBudget(snapshot.table, [...files, ...pendingFiles], read);
    try {
      // The time spent waiting for its turn comes off the read's own deadline.
      return await this.read(snapshot, source, files, pendingFiles, { ...read, timeoutMs: timeLeft(read.timeoutMs, waitStarted) });
    } finally {
      release();
    }
  }

  /** Waits until the read's files fit the table's read budget (none without `maxReadBytes`); resolves to the release. */
  private async readBudget(table: string, files: readonly LiveFile[], read: LakeRead): Promise<() => void> {
    const limit = this.options.maxReadBytes;
    if (limit === undefined) return () => undefined;
    const bytes = files.reduce((n, f) => n + f.size, 0);
    if (bytes > limit) {
      throw queryError('QUERY_TOO_COMPLEX', `the query would read ${bytes} bytes of ${table}'s files, more than the ${limit} one query may read here: narrow its filter (a day, a key)`, {
        table,
        bytes,
        maxReadBytes: limit,
      });
    }
    let budget = this.budgets.get(table);
    if (!budget) this.budgets.set(table, (budget = new ByteBudget(limit)));
    return budget.acquire(bytes, read.timeoutMs ?? DEFAULT_BUDGET_WAIT_MS);
  }

  private async read(snapshot: TableSnapshot, source: ViewSpec, files: LiveFile[], pendingFiles: LiveFile[], read: LakeRead): Promise<Record<string, unknown>[]> {
    // The lake applies one file filter to the table and to its tail; their paths never collide
    // (part-<uuid> names), so one set of both serves.
    const wanted = new Set([...files, ...pendingFiles].map((f) => f.path));
    // A pooled, prepared read: the same files and SQL again (lookups into one bucket, a panel
    // polled while its files do not change) skip connection, view and planning costs. A second
    // try has what is left of the deadline, not all of it again (its slot was held twice as long).
    const started = performance.now();
    const run = () => this.options.engine.read({ [RELATION]: { ...source, files: (f) => wanted.has(f.path) } }, read.sql, read.params, { timeoutMs: timeLeft(read.timeoutMs, started) });
    try {
      try {
        return await run();
      } catch (err) {
        // S3 tables are read through a bounded local file cache, which may evict a file between
        // handing out its path and DuckDB opening it; a second read downloads it again. A file
        // that is really gone (vacuumed: an old version's) fails again and answers as before.
        if (!(isSluiceError(err) && err.code === 'LAKE_DATA_FILE_MISSING')) throw err;
        return await run();
      }
    } catch (err) {
      throw translate(err, snapshot.table);
    }
  }

  /** Past snapshots kept of `table` under another table id (the table was created again): they are not this table's. */
  private forgetPastOfOtherTable(table: string, tableId: string): void {
    for (const [key, s] of this.past) if (s.table === table && s.tableId !== tableId) this.past.delete(key);
  }

  async close(): Promise<void> {
    // The engine belongs to main.ts, which closes it; nothing else is held open here.
  }

  private async load(table: string, target: 'current' | { version?: number; timestampMs?: number }): Promise<TableSnapshot> {
    const storage = this.storages.get(table);
    if (!storage) throw queryError('QUERY_TABLE_UNKNOWN', JSON.stringify(table), { table });
    let spec: ViewSpec;
    let tailExcluded: boolean;
    try {
      // A table may be configured before its first commit: open it on first use, not at start.
      let lakeTable = this.opened.get(table);
      if (!lakeTable) {
        lakeTable = await LakeTable.open(storage, { name: table });
        this.opened.set(table, lakeTable);
      }
      spec = target === 'current' ? await consistentCurrentView(lakeTable) : { storage, snapshot: await lakeTable.snapshot(target) };
      // A past version is read without the tail, whose batches its `txn` may already name.
      tailExcluded = target !== 'current' && (await hasTail(storage));
    } catch (err) {
      throw translate(err, table);
    }
    const snapshot = spec.snapshot;
    const pending = spec.pending;
    if (target === 'current') this.forgetPastOfOtherTable(table, snapshot.metadata.id);
    const view: TableSnapshot = {
      table,
      tableId: snapshot.metadata.id,
      version: snapshot.version,
      commitTimeMs: snapshot.timestampMs,
      shape: {
        columns: snapshot.schema.fields.map((f) => ({ name: f.name, type: typeof f.type === 'string' ? f.type : f.type.type, nullable: f.nullable })),
        partitionColumns: [...snapshot.partitionColumns],
      },
      files: snapshot.files.map((f) => ({
        path: f.path,
        size: f.size,
        partitionValues: { ...f.partitionValues },
        stats: snapshot.stats(f),
      })),
      txns: tailExcluded ? {} : Object.fromEntries([...snapshot.txnVersions()].map(([appId, v]) => [appId, Number(v)])),
      ...(tailExcluded ? { tailExcluded: true as const } : {}),
      configuration: { ...snapshot.configuration },
      tailVersion: spec.tailVersion,
      pending: pending && {
        version: pending.snapshot.version,
        keys: [...pending.keys],
        files: pending.snapshot.files.map((f) => ({ path: f.path, size: f.size, partitionValues: { ...f.partitionValues }, stats: pending.snapshot.stats(f) })),
      },
    };
    this.sources.set(view, spec);
    return view;
  }
}

/**
 * The table ⊕ its amortised-merge tail, such that the table's `txn` offsets never run ahead of
 * the rows read. `currentView()` reads the tail, then the table; a MERGE appends to the tail and
 * then commits its `txn` to the table, so a tail read before the table can miss a batch whose
 * offset the table already shows. Reading the view twice and pairing the first table snapshot
 * with the second tail closes that gap — valid when no fold removed tail files in between (the
 * second tail then holds every batch committed up to the first table snapshot, and a row seen in
 * both is resolved by version). Folds are rare: only a fold landing between every pair of
 * reads, `CONSISTENT_VIEW_TRIES` times in a row, exhausts the tries, and then the answer is a
 * retryable LAKE_STORAGE_UNAVAILABLE (503 with Retry-After), never a view whose offsets may run
 * ahead of its rows (a read-your-writes answer would claim rows it does not hold).
 */
export async function consistentCurrentView(table: Pick<LakeTable, 'currentView' | 'name'>): Promise<ViewSpec> {
  let first = await table.currentView();
  for (let attempt = 0; attempt < CONSISTENT_VIEW_TRIES; attempt++) {
    const second = await table.currentView();
    if (noFoldBetween(first, second)) return { ...first, pending: second.pending, tailVersion: second.tailVersion };
    first = second;
  }
  throw new SluiceError('LAKE_STORAGE_UNAVAILABLE', `${table.name}: folds replaced its tail during each of ${CONSISTENT_VIEW_TRIES} reads; try again`, { retryable: true });
}

/**
 * No fold removed tail files between two view reads: every file of the first tail is in the
 * second, and the second tail has no remove the first did not have. The second part matters
 * for a batch that landed after the first tail read and was folded before the second: its
 * file is in neither tail, and without it the first table's txn offsets would claim rows
 * that the pair does not hold.
 */
function noFoldBetween(first: ViewSpec, second: ViewSpec): boolean {
  // A view leaves an empty tail out, and with it the removes of the fold that emptied it: then
  // only a table that did not change between the reads rules a fold out (a fold commits there).
  if (!first.pending || !second.pending) return first.snapshot.version === second.snapshot.version;
  if (first.pending.snapshot.version === second.pending.snapshot.version) return true; // the same tail
  const later = new Set(second.pending.snapshot.files.map((f) => f.path));
  if (!first.pending.snapshot.files.every((f) => later.has(f.path))) return false;
  const removedBefore = new Set(first.pending.snapshot.tombstones.map((r) => r.path));
  return second.pending.snapshot.tombstones.every((r) => removedBefore.has(r.path));
}

/** Pairs of reads {@link consistentCurrentView} tries before it gives up for this request. */
const CONSISTENT_VIEW_TRIES = 8;

/** `_delta_log/<20-digit version>.json`, the Delta commit file name (DELTA.md §2). */
function commitKey(version: number): string {
  return `_delta_log/${String(version).padStart(20, '0')}.json`;
}

/**
 * Whether `own`, the commit file of `snapshot`'s version as stored now, is the one the snapshot
 * was read from. Gone, or newer than the snapshot: the table was dropped and created again under
 * this name (with fewer versions, no next commit ever showed, and it stayed unseen).
 */
function isOwnCommit(own: { modifiedMs: number } | undefined, snapshot: TableSnapshot): boolean {
  return own !== undefined && own.modifiedMs <= snapshot.commitTimeMs;
}

/**
 * Whether the table has an amortised-merge tail: its checkpoint hint, or else any key of its log
 * (one key listed). The whole tail log was listed for every time-travel read: a commit per fold,
 * millions a month.
 */
async function hasTail(storage: Storage): Promise<boolean> {
  if ((await storage.head(TAIL_PREFIX + '_delta_log/_last_checkpoint')) !== undefined) return true;
  return (await storage.list(TAIL_PREFIX + '_delta_log/0', { limit: 1 })).length > 0;
}

/**
 * Lake errors in query-api's words. What goes to the client names the table, the version or
 * instant asked for and the lake's error code, never the lake's own message: that holds storage
 * URIs, bucket keys, local paths and endpoints (the log line of the request keeps it).
 */
function translate(err: unknown, table: string): Error {
  if (!isSluiceError(err)) return queryError('QUERY_INTERNAL', undefined, undefined, err);
  switch (err.code) {
    case 'LAKE_NOT_FOUND':
      return queryError('QUERY_TABLE_UNKNOWN', `${JSON.stringify(table)} has no commits yet`, { table }, err);
    case 'LAKE_VERSION_NOT_FOUND':
      return queryError('QUERY_VERSION_UNKNOWN', missingVersion(err.details), { table }, err);
    case 'LAKE_DATA_FILE_MISSING':
      // Only an old version's files are ever deleted (vacuum after retention).
      return queryError('QUERY_VERSION_UNKNOWN', 'a data file of this version has been vacuumed', { table }, err);
    case 'LAKE_UNSUPPORTED_PROTOCOL':
    case 'LAKE_LOG_CORRUPT':
    case 'LAKE_SCHEMA_INVALID':
      // Retrying will not help and it is no bug here: say which table and why (the lake's code).
      return queryError('QUERY_TABLE_UNREADABLE', JSON.stringify(table), { table, cause: err.code }, err);
    case 'LAKE_STORAGE_UNAVAILABLE':
      return queryError('QUERY_LAKE_UNAVAILABLE', undefined, { table, cause: err.code, retryAfterSeconds: 1 }, err);
    // Storage refusing this service (credentials, permissions, a bucket that is not there): the
    // lake cannot be read until an operator fixes the deployment, which `cause` names. It was
    // answered 500 "unexpected error", as if the service were broken.
    case 'LAKE_STORAGE_ACCESS_DENIED':
    case 'LAKE_STORAGE_BUCKET_NOT_FOUND':
      return queryError('QUERY_LAKE_UNAVAILABLE', undefined, { table, cause: err.code, retryAfterSeconds: 30 }, err);
    case 'LAKE_OUT_OF_MEMORY':
      // DuckDB's memory_limit is shared by the queries running at once: fewer of them may fit.
      return queryError('QUERY_SATURATED', 'the query engine ran out of memory; retry after the given delay', { retryAfterSeconds: 1 }, err);
    case 'LAKE_QUERY_TIMEOUT':
      return queryError('QUERY_TIMEOUT', err.message, { timeoutMs: err.details.timeoutMs }, err);
    case 'LAKE_QUERY_FAILED':
      // Values are validated before SQL; what DuckDB still rejects on conversion (2026-02-31) is the client's.
      if (/Conversion Error|Out of Range Error/i.test(err.message)) return queryError('QUERY_VALUE_INVALID', err.message.split('\n')[0], { table }, err);
      return queryError('QUERY_INTERNAL', undefined, undefined, err);
    default:
      if (err.code.startsWith('QUERY_')) return err;
      // Any other lake error the lake calls retryable (a short S3 read: LAKE_STORAGE_TRUNCATED)
      // is the store's for a moment, not a bug here: 503 with Retry-After, not 500.
      if (err.retryable) return queryError('QUERY_LAKE_UNAVAILABLE', undefined, { table, cause: err.code, retryAfterSeconds: 1 }, err);
      return queryError('QUERY_INTERNAL', undefined, undefined, err);
  }
}

/** What a missing version was, from the lake error's details (its message names the storage). */
function missingVersion(details: Readonly<Record<string, unknown>>): string | undefined {
  if (typeof details.version === 'number') return `the table has no version ${details.version}`;
  if (typeof details.timestampMs === 'number') return `the table has no version committed at or before ${new Date(details.timestampMs).toISOString()}`;
  return undefined;
}
