import { createHash } from 'node:crypto';
import { canonicalJson, type ResultCache } from '../cache/result-cache';
import { queryError } from '../errors';
import { notOlderThan, type LakePort, type LiveFile, type TableSnapshot } from '../lake/lake-port';
import type { SnapshotTracker } from '../lake/snapshots';
import type { Limiter } from '../limits/limiter';
import { timeLeft } from '../limits/time-left';
import { type OutputKind, compileQuery } from './compile';
import { pruneFiles } from './prune';
import type { AsOf, Filter, QueryRequest, WaitFor } from './query-types';

/** How a table's rows are found by entity key (from the contract). */
export interface EntityLookup {
  /** Key columns in key order. */
  keyColumns: string[];
  /** Joins the parts of a composite key in the key string (contracts' KEY_SEPARATOR). */
  separator: string;
  /** Partition column holding `bucketOf(key)`; lookups read only that bucket's files. */
  bucket?: { column: string; bucketOf(key: string): number };
  /**
   * Column holding a hash of the key that the table's files are clustered by: lookups also
   * filter on it, so file statistics skip files of the bucket and Parquet row-group statistics
   * skip most of the file that is read.
   */
  cluster?: { column: string; hashOf(key: string): number };
}

/** Where a table stands: carried by every answer so a dashboard knows how fresh it is. */
export interface Freshness {
  table: string;
  version: number;
  /** ISO time the version was committed. */
  commitTime: string;
  /** Largest event time in the version's files (from file statistics), or null when unknown. */
  maxEventTime: string | null;
  /** Committed offsets: the table's `txn` versions by appId. */
  offsets: Record<string, number>;
  /** The amortised-merge tail read with the table (merge-on-read), or null when there is none. */
  pending: { version: number; files: number } | null;
  /** Present on a past version of a table with a tail: read without the tail, so `offsets` is empty (see TableSnapshot). */
  tailExcluded?: true;
}

/** The answer to a JSON query. */
export interface QueryAnswer {
  columns: string[];
  rows: Record<string, unknown>[];
  rowCount: number;
  /** True when more rows matched than `limit`; page on with `offset`. */
  truncated: boolean;
  freshness: Freshness;
  stats: { filesTotal: number; filesRead: number; cached: boolean; elapsedMs: number };
}

/** Table metadata for `GET /v1/tables/:table`. */
export interface TableDescription {
  table: string;
  columns: { name: string; type: string; nullable: boolean }[];
  partitionColumns: string[];
  rowCount: number | null;
  fileCount: number;
  sizeBytes: number;
  freshness: Freshness;
}

export interface QueryServiceOptions {
  maxRows: number;
  queryTimeoutMs: number;
  waitTimeoutMs: number;
  /** Column whose max statistic is the table's max event time. */
  eventTimeColumn: string;
  /** Called with the freshness of an answer at the newest version answered so far for its table (metrics). */
  onAnswer?: (freshness: Freshness) => void;
}

/** Resolves snapshots (time travel, read-your-writes), compiles, prunes, caches and runs queries. */
export class QueryService {
  /** Answers being computed, by cache key: identical concurrent queries share one DuckDB run. */
  private readonly inflight = new Map<string, Promise<CachedAnswer>>();
  /** Past snapshots being loaded, by table and version or time (see {@link pastLoad}). */
  private readonly pastLoads = new Map<string, Promise<TableSnapshot>>();
  /** Which snapshot answered newest per table (time-travel answers are older). */
  private readonly newestAnswered = new Map<string, Pick<TableSnapshot, 'tableId' | 'version' | 'commitTimeMs'>>();

  constructor(
    private readonly lake: LakePort,
    private readonly tracker: SnapshotTracker,
    private readonly cache: ResultCache<CachedAnswer>,
    private readonly limiter: Limiter,
    private readonly options: QueryServiceOptions,
  ) {}

  tables(): string[] {
    return this.lake.tables();
  }

  /** Throws QUERY_TABLE_UNKNOWN for a table this service does not serve. */
  assertTable(table: string): void {
    if (!this.lake.tables().includes(table)) throw queryError('QUERY_TABLE_UNKNOWN', JSON.stringify(table), { table });
  }

  /** The snapshot a request reads: as of a version or time, or the latest (after waiting, if asked). */
  async snapshot(table: string, asOf?: AsOf, waitFor?: WaitFor): Promise<TableSnapshot> {
    this.assertTable(table);
    if (asOf && waitFor) throw queryError('QUERY_SHAPE_INVALID', 'asOf and waitFor cannot be combined');
    // A past snapshot replays the log (every distinct time again): it takes a query slot, so a
    // client walking through versions meets the same concurrency limit and 503 as queries.
    if (asOf && 'version' in asOf) return this.loaded(table, this.pastLoad(`${table}@${asOf.version}`, () => this.lake.atVersion(table, asOf.version)));
    if (asOf && 'timestamp' in asOf) {
      const ms = Date.parse(asOf.timestamp);
      if (Number.isNaN(ms)) throw queryError('QUERY_VALUE_INVALID', `asOf.timestamp ${JSON.stringify(asOf.timestamp)}`);
      return this.loaded(table, this.pastLoad(`${table}@t${ms}`, () => this.lake.atTimestamp(table, ms)));
    }
    if (waitFor && (waitFor.version !== undefined || Object.keys(waitFor.offsets ?? {}).length > 0)) {
      // Its own deadline is checked between loads; a load that hangs gets the query timeout on top.
      return this.loaded(table, this.tracker.waitFor(table, waitFor, this.options.waitTimeoutMs), (waitFor.timeoutMs ?? this.options.waitTimeoutMs) + this.options.queryTimeoutMs);
    }
    return this.loaded(table, this.tracker.latest(table));
  }

  /**
   * One load per past target at a time, holding one query slot: concurrent requests for it, and a
   * client's retry after its request timed out while the load went on, wait for the same load.
   * (Each waiter took a slot of its own around the shared load: four retries of one slow past
   * version held every slot, and no query ran until that load ended.)
   */
  private pastLoad(key: string, load: () => Promise<TableSnapshot>): Promise<TableSnapshot> {
    let pending = this.pastLoads.get(key);
    if (pending === undefined) {
      pending = this.limiter.run(load).finally(() => this.pastLoads.delete(key));
      this.pastLoads.set(key, pending);
    }
    return pending;
  }

  /**
   * A snapshot, or 503 with Retry-After once the query timeout passed without it: storage too
   * slow to answer now. The load goes on (shared with later requests); the request does not
   * hang on it for as long as the storage client retries, minutes on a slow S3.
   */
  private loaded<T>(table: string, load: Promise<T>, ms = this.options.queryTimeoutMs): Promise<T> {
    return withTimeout(load, ms, () => queryError('QUERY_LAKE_UNAVAILABLE', `the snapshot of ${table} did not load within ${ms} ms`, { table, retryAfterSeconds: 1 }));
  }

  freshness(s: TableSnapshot): Freshness {
    const f = this.computeFreshness(s);
    // Only the newest version answered so far: a time-travel read of version 0 set the served
    // version gauge back to 0, and freshness alerts fired on it. A table created again under the
    // same name (another id) starts its versions over: its answers count from then on (they were
    // ignored until its version passed the old table's, and the freshness metrics went quiet).
    // A late answer from the dropped table (older commit time) does not take it back.
    const newest = this.newestAnswered.get(f.table);
    if (newest === undefined || notOlderThan(s, newest)) {
      this.newestAnswered.set(f.table, { tableId: s.tableId, version: s.version, commitTimeMs: s.commitTimeMs });
      this.options.onAnswer?.(f);
    }
    return f;
  }

  private computeFreshness(s: TableSnapshot): Freshness {
    let maxEvent: number | undefined;
    for (const f of [...s.files, ...(s.pending?.files ?? [])]) {
      const v = f.stats?.maxValues?.[this.options.eventTimeColumn];
      const ms = typeof v === 'string' ? Date.parse(v) : NaN;
      if (!Number.isNaN(ms) && (maxEvent === undefined || ms > maxEvent)) maxEvent = ms;
    }
    return {
      table: s.table,
      version: s.version,
      commitTime: new Date(s.commitTimeMs).toISOString(),
      maxEventTime: maxEvent === undefined ? null : new Date(maxEvent).toISOString(),
      offsets: { ...s.txns },
      pending: s.pending ? { version: s.pending.version, files: s.pending.files.length } : null,
      ...(s.tailExcluded ? { tailExcluded: s.tailExcluded } : {}),
    };
  }

  describe(s: TableSnapshot): TableDescription {
    // Files and bytes count the pending tail too (queries read it). Rows do not add up across
    // table and tail (a tail row may replace or delete a table row): unknown (null) while the
    // tail holds rows, as when a file has no stats.
    const pendingFiles = s.pending?.files ?? [];
    let rows: number | null = pendingFiles.length > 0 ? null : 0;
    let bytes = 0;
    for (const f of [...s.files, ...pendingFiles]) bytes += f.size;
    for (const f of s.files) {
      const n = f.stats?.numRecords;
      rows = rows !== null && typeof n === 'number' ? rows + n : null;
    }
    return {
      table: s.table,
      columns: s.shape.columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable })),
      partitionColumns: [...s.shape.partitionColumns],
      rowCount: rows,
      fileCount: s.files.length + pendingFiles.length,
      sizeBytes: bytes,
      freshness: this.freshness(s),
    };
  }

  /** Answers a validated JSON query; the answer is cached under (table, version, query). */
  async query(table: string, request: QueryRequest): Promise<QueryAnswer> {
    const started = Date.now();
    const snapshot = await this.snapshot(table, request.asOf, request.waitFor);
    const { asOf: _a, waitFor: _w, ...shapeOfQuery } = request;
    return this.run(snapshot, shapeOfQuery, started);
  }

  /**
   * The row of one entity: key columns equal to the key's parts and, when the table is bucketed,
   * only the key's bucket read. Throws QUERY_ENTITY_NOT_FOUND (with freshness) when absent.
   */
  async lookup(table: string, lookup: EntityLookup, key: string, asOf?: AsOf, waitFor?: WaitFor): Promise<{ entity: Record<string, unknown>; freshness: Freshness; stats: QueryAnswer['stats'] }> {
    const started = Date.now();
    const snapshot = await this.snapshot(table, asOf, waitFor);
    const parts = lookup.keyColumns.length === 1 ? [key] : key.split(lookup.separator);
    if (parts.length !== lookup.keyColumns.length) {
      throw queryError('QUERY_VALUE_INVALID', `key ${JSON.stringify(key)} needs ${lookup.keyColumns.length} parts joined by ${JSON.stringify(lookup.separator)}`);
    }
    const where: Filter[] = lookup.keyColumns.map((column, i) => ({ column, op: '=', value: parts[i] }));
    // Bucket pruning only when this version of the table is bucketed by that column.
    if (lookup.bucket && snapshot.shape.partitionColumns.includes(lookup.bucket.column)) {
      where.push({ column: lookup.bucket.column, op: '=', value: lookup.bucket.bucketOf(key) });
    }
    const keyDerived: string[] = [];
    if (lookup.cluster && snapshot.shape.columns.some((c) => c.name === lookup.cluster!.column)) {
      where.push({ column: lookup.cluster.column, op: '=', value: lookup.cluster.hashOf(key) });
      keyDerived.push(lookup.cluster.column);
    }
    const answer = await this.run(snapshot, { where, limit: 1 }, started, keyDerived);
    if (answer.rows.length === 0) {
      throw queryError('QUERY_ENTITY_NOT_FOUND', `${JSON.stringify(key)} in ${table} at version ${snapshot.version}`, { freshness: answer.freshness });
    }
    return { entity: answer.rows[0], freshness: answer.freshness, stats: answer.stats };
  }

  /**
   * Answers from the cache when the same query read the same data before: the key is the
   * query and the files it reads after pruning (and the table's columns), not the table version,
   * so a commit that leaves those files alone (a fold of another bucket, an append to another
   * day) does not invalidate it. Data files are immutable, so equal files mean equal rows; the
   * freshness is always the requested snapshot's. `keyDerived`: columns that are a function of
   * the entity key, safe to prune on with a pending tail.
   */
  private async run(snapshot: TableSnapshot, shapeOfQuery: Omit<QueryRequest, 'asOf' | 'waitFor'>, started: number, keyDerived: readonly string[] = []): Promise<QueryAnswer> {
    const compiled = compileQuery(shapeOfQuery, snapshot.shape, { relation: this.lake.relation, maxRows: this.options.maxRows });
    // With a pending tail, a file may only be skipped on columns that are a function of the key
    // (the key itself, the bucket, a key hash): otherwise a skipped table file would hide the
    // newer version of a key from the merge-on-read and let a stale tail row through.
    const prunable = snapshot.pending ? new Set([...snapshot.pending.keys, ...snapshot.shape.partitionColumns, ...keyDerived]) : undefined;
    const files = pruneFiles(snapshot.files, shapeOfQuery.where, snapshot.shape, prunable);
    const pendingFiles = snapshot.pending ? pruneFiles(snapshot.pending.files, shapeOfQuery.where, snapshot.shape, prunable) : [];
    const key = `${snapshot.table}:${dataKey(snapshot, files, pendingFiles)}:${canonicalJson(shapeOfQuery)}`;
    const stats = (cached: boolean) => ({ filesTotal: snapshot.files.length, filesRead: files.length, cached, elapsedMs: Date.now() - started });
    const hit = this.cache.get(key);
    if (hit) return { ...hit, freshness: this.freshness(snapshot), stats: stats(true) };
    let pending = this.inflight.get(key);
    const shared = pending !== undefined;
    if (!pending) {
      pending = this.compute(snapshot, compiled, files, pendingFiles, key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    const answer = await pending;
    return { ...answer, freshness: this.freshness(snapshot), stats: stats(shared) };
  }

  private async compute(snapshot: TableSnapshot, compiled: ReturnType<typeof compileQuery>, files: LiveFile[], pendingFiles: LiveFile[], key: string): Promise<CachedAnswer> {
    // The slot is held until DuckDB really finishes, so DuckDB is told to stop at the same deadline
    // that answers the client 504 (time queued counts): the interrupt frees the slot, rather than
    // a runaway query counting against the concurrency limit long after its client gave up.
    const started = performance.now();
    let ran = false;
    const running = this.limiter.run(() => {
      ran = true;
      return this.lake.query(snapshot, files, pendingFiles, { sql: compiled.sql, params: compiled.params, timeoutMs: timeLeft(this.options.queryTimeoutMs, started) });
    });
    const ms = this.options.queryTimeoutMs;
    // A query that never got a slot did not take long: the service was full (503 with Retry-After).
    const late = () => (ran ? timedOut(ms) : queryError('QUERY_SATURATED', `no query slot within ${ms} ms`, { retryAfterSeconds: 1 }));
    const rows = toJsonRows(await withTimeout(running, ms, late), compiled.kinds);
    const truncated = rows.length > compiled.limit;
    if (truncated) rows.length = compiled.limit;
    const answer = { columns: compiled.columns, rows, rowCount: rows.length, truncated };
    this.cache.set(key, answer, answerBytes(rows));
    return answer;
  }
}

/** What the cache keeps of an answer: the rows. Freshness and stats belong to each request. */
export type CachedAnswer = Omit<QueryAnswer, 'freshness' | 'stats'>;

/**
 * Identifies the data a query reads: the table's columns and the paths of the files read (and of
 * the tail's, resolved against them), hashed so that a scan of many files keeps a short key.
 */
function dataKey(snapshot: TableSnapshot, files: readonly LiveFile[], pendingFiles: readonly LiveFile[]): string {
  const h = createHash('sha1');
  h.update(JSON.stringify(snapshot.shape));
  for (const f of files) h.update('\n').update(f.path);
  // A tail changes how the table's rows resolve even where none of its files is read.
  if (snapshot.pending) {
    h.update('\n|tail');
    for (const f of pendingFiles) h.update('\n').update(f.path);
  }
  return h.digest('base64url');
}

/** QUERY_TIMEOUT: no answer within `ms`. */
function timedOut(ms: number) {
  return queryError('QUERY_TIMEOUT', `no answer within ${ms} ms`, { timeoutMs: ms });
}

function withTimeout<T>(work: Promise<T>, ms: number, late = () => timedOut(ms)): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  work.catch(() => undefined); // a late failure after the timeout has nobody to tell
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

const DUCK_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)\+00$/;

/** Integers become numbers where exact (else stay decimal strings); UTC timestamps become ISO-8601. */
export function toJsonRows(rows: Record<string, unknown>[], kinds: Record<string, OutputKind>): Record<string, unknown>[] {
  const integer = Object.keys(kinds).filter((k) => kinds[k] === 'integer');
  const timestamp = Object.keys(kinds).filter((k) => kinds[k] === 'timestamp');
  for (const row of rows) {
    for (const k of integer) {
      const v = row[k];
      if (typeof v === 'string' && Number.isSafeInteger(Number(v))) row[k] = Number(v);
    }
    for (const k of timestamp) {
      const v = row[k];
      const m = typeof v === 'string' ? DUCK_TIMESTAMP.exec(v) : null;
      if (m) row[k] = `${m[1]}T${m[2]}Z`;
    }
  }
  return rows;
}

/**
 * About the memory an answer holds, for the result cache's budget: every value of every row
 * counted (text by its length), without serialising. Estimating from the first 20 rows let an
 * answer whose later rows were large (one long text) fill the cache far past its budget.
 */
export function answerBytes(rows: readonly Record<string, unknown>[]): number {
  let bytes = 256;
  for (const row of rows) {
    bytes += 32;
    for (const key in row) {
      const v = row[key];
      bytes += 16 + (typeof v === 'string' ? 2 * v.length : v !== null && typeof v === 'object' ? 2 * JSON.stringify(v).length : 8);
    }
  }
  return bytes;
}
