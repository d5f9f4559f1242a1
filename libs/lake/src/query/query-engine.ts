import { DuckDBConnection, DuckDBInstance, type DuckDBResultReader, type DuckDBPreparedStatement, StatementType, type DuckDBValue } from '@duckdb/node-api';
import * as path from 'node:path';
import { ident, sharedDuckDB } from '../duck';
import { lakeError } from '../errors';
import type { LiveFile, Snapshot } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { filesRelationSql, translateReadError } from '../table/relation';
import { duckType } from '../table/schema';
import { FileLease } from '../storage/file-lease';

/** Options of a query engine. */
export interface QueryEngineOptions {
  /**
   * Locked-down mode: a dedicated DuckDB instance that can read only `allowedDirectories`
   * (`enable_external_access=false`, configuration locked), and sessions run SELECTs only.
   */
  locked?: boolean;
  /** Directories the locked engine may read: the lake root(s) and any storage cache dir. */
  allowedDirectories?: readonly string[];
  /** DuckDB `threads` for a locked engine's own instance. */
  threads?: number;
  /** DuckDB `memory_limit` for a locked engine's own instance, e.g. '1GB'. */
  memoryLimit?: string;
  /**
   * DuckDB's external file cache (`enable_external_file_cache`) for a locked engine's own
   * instance: keeps blocks of the files it read inside `memory_limit`; default on (DuckDB's).
   */
  externalFileCache?: boolean;
  /**
   * Where a locked engine's own instance spills what exceeds `memory_limit`. DuckDB's default for
   * an in-memory database is `.tmp` under the working directory, which a read-only image cannot
   * write: every query past the limit failed instead of spilling.
   */
  tempDirectory?: string;
  /** The most a locked engine's instance may spill, in MiB (keep it below the volume's size: a full emptyDir evicts the pod). */
  maxTempDirectoryMb?: number;
}

/** One table exposed to a session as a view. */
export interface ViewSpec {
  storage: Storage;
  snapshot: Snapshot;
  /** Only these live files (e.g. one partition for a point lookup); default all. */
  files?: (file: LiveFile) => boolean;
  /**
   * Pending changes of an amortised merge (from {@link LakeTable.currentView}): the view then
   * shows current state, each key's highest version across table and tail, tombstones applied.
   */
  pending?: PendingSpec;
  /**
   * The version of the table's tail when it has one, pending rows or not (a tail emptied by a
   * fold has no `pending`): what a reader watches for change besides the table's own version.
   */
  tailVersion?: number;
}

/** The tail of an amortised-merge table and how to resolve it against the table. */
export interface PendingSpec {
  storage: Storage;
  snapshot: Snapshot;
  keys: readonly string[];
  versionColumn: string;
  deleteColumn?: string;
  deleteValue: string;
}

/** Parameters: positional (`?`, `$1`) as an array, or named (`$name`) as an object. */
export type QueryParams = DuckDBValue[] | Record<string, DuckDBValue>;

/**
 * Runs read-only SQL over table snapshots. Keep one engine per process (it owns at most one
 * DuckDB instance); open a session per request or unit of work, and close it.
 */
export class LakeQueryEngine {
  private readonly locked: boolean;
  /** Connections of {@link read}, each with its prepared statements. */
  private readonly idle: PooledConnection[] = [];
  private closed = false;
  private constructor(private readonly instance: DuckDBInstance, locked: boolean) {
    this.locked = locked;
  }

  /** Creates an engine: the shared instance by default, or a locked-down one of its own. */
  static async create(options: QueryEngineOptions = {}): Promise<LakeQueryEngine> {
    if (!options.locked) return new LakeQueryEngine(await sharedDuckDB(), false);
    const dirs = (options.allowedDirectories ?? []).map((d) => path.resolve(d) + path.sep);
    if (dirs.length === 0) throw lakeError('LAKE_INVALID_INPUT', 'a locked query engine needs allowedDirectories');
    const config: Record<string, string> = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' };
    if (options.threads) config.threads = String(options.threads);
    if (options.memoryLimit) config.memory_limit = options.memoryLimit;
    if (options.externalFileCache !== undefined) config.enable_external_file_cache = String(options.externalFileCache);
    if (options.tempDirectory !== undefined) config.temp_directory = options.tempDirectory;
    if (options.maxTempDirectoryMb !== undefined) config.max_temp_directory_size = `${Math.floor(options.maxTempDirectoryMb)}MiB`;
    const instance = await DuckDBInstance.create(':memory:', config);
    const setup = await instance.connect();
    try {
      await setup.run(`SET GLOBAL TimeZone='UTC'`);
      // Data files are immutable (a rewrite writes new names), so a file's Parquet footer can be
      // kept between queries: a point lookup then parses no footer it has read before. DuckDB
      // keeps them in its object cache, an LRU inside memory_limit. (A parquet extension option:
      // set here, not in the instance config, which is read before extensions load.)
      await setup.run('SET GLOBAL parquet_metadata_cache=true');
      await setup.run(`SET allowed_directories=[${dirs.map((d) => `'${d.replace(/'/g, "''")}'`).join(', ')}]`);
      await setup.run('SET enable_external_access=false');
      await setup.run('SET lock_configuration=true');
    } finally {
      setup.closeSync();
    }
    return new LakeQueryEngine(instance, true);
  }

  /** Opens a session with one view per entry of `views` (view name → table snapshot). */
  async open(views: Readonly<Record<string, ViewSpec>>): Promise<LakeSession> {
    this.refuseClosed();
    const conn = await this.instance.connect();
    // The files the views name stay in their cache for as long as the session is open.
    const lease = new FileLease();
    try {
      await lease.run(async () => {
        // A locked engine is UTC instance-wide and refuses SET (a failed statement per session).
        if (!this.locked) await conn.run(`SET TimeZone='UTC'`);
        for (const [name, spec] of Object.entries(views)) {
          await conn.run(`CREATE TEMP VIEW ${ident(name)} AS ${await viewSql(spec)}`);
        }
      });
    } catch (err) {
      lease.release();
      conn.closeSync();
      throw (err as { code?: string }).code ? err : translateReadError('opening query session', err);
    }
    return new LakeSession(conn, this.locked, lease);
  }

  /**
   * Runs one statement over `views` and returns JSON-safe rows, like {@link LakeSession.queryJson},
   * without a session: on a pooled connection that keeps the prepared statement, so the next call
   * with the same views and SQL only binds and executes. The views become the statement's CTEs,
   * whose text names every file read; data files are immutable, so equal text means equal data.
   * A point lookup then costs DuckDB's execution alone, not a connection, views and planning
   * (docs/bench/query-api.md).
   */
  async read(views: Readonly<Record<string, ViewSpec>>, sql: string, params?: QueryParams, options: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    this.refuseClosed();
    // The files the views name stay in their cache until the statement is done.
    return FileLease.holding(() => this.readLeased(views, sql, params, options));
  }

  private async readLeased(views: Readonly<Record<string, ViewSpec>>, sql: string, params: QueryParams | undefined, options: QueryOptions): Promise<Record<string, unknown>[]> {
    checkTimeout(options.timeoutMs);
    const started = performance.now();
    let statementSql: string;
    // Building the views fetches the files (downloads on an S3 cache miss): within the timeout.
    // Once the read has failed (timed out, or a fetch failed) no further file is fetched.
    const stop = new AbortController();
    try {
      statementSql = await withinTimeout(withViews(views, sql, stop.signal), options.timeoutMs);
    } catch (err) {
      stop.abort(err);
      throw (err as { code?: string }).code ? err : translateReadError('reading views', err);
    }
    const left = options.timeoutMs === undefined ? undefined : options.timeoutMs - (performance.now() - started);
    if (left !== undefined && left < 1) throw timeoutError(options.timeoutMs as number, started);
    const pooled = this.idle.pop() ?? (await this.connectPooled());
    try {
      const reader = await runStatement(pooled.conn, { ...options, timeoutMs: left }, () => pooled.statement(statementSql, this.locked), params);
      return rowObjects(reader, 'json');
    } catch (err) {
      // A statement that failed (a vacuumed file, an interrupt mid-plan) is not worth keeping.
      pooled.forget(statementSql);
      throw err;
    } finally {
      if (!this.closed && this.idle.length < MAX_IDLE_CONNECTIONS) this.idle.push(pooled);
      else pooled.close();
    }
  }

  /**
   * Releases the pooled connections and, for a locked engine, its DuckDB instance (the shared
   * instance stays for the process's other users). Reads already running finish and release
   * their connection; later calls are refused. Sessions still open keep their connection until
   * closed. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const pooled of this.idle.splice(0)) pooled.close();
    if (this.locked) this.instance.closeSync();
  }

  private refuseClosed(): void {
    if (this.closed) throw lakeError('LAKE_INVALID_INPUT', 'query engine is closed');
  }

  private async connectPooled(): Promise<PooledConnection> {
    const conn = await this.instance.connect();
    if (!this.locked) await conn.run(`SET TimeZone='UTC'`);
    return new PooledConnection(conn);
  }
}

/** Idle pooled connections kept by an engine; more are opened under load and closed after. */
const MAX_IDLE_CONNECTIONS = 8;
/** Prepared statements kept per pooled connection, least recently used dropped first. */
const STATEMENTS_PER_CONNECTION = 64;

/** A connection of {@link LakeQueryEngine.read} and the statements prepared on it. */
class PooledConnection {
  /** By SQL text; Map order is use order, the least recently used first. */
  private readonly statements = new Map<string, DuckDBPreparedStatement>();

  constructor(readonly conn: DuckDBConnection) {}

  async statement(sql: string, selectOnly: boolean): Promise<DuckDBPreparedStatement> {
    const hit = this.statements.get(sql);
    if (hit) {
      this.statements.delete(sql);
      this.statements.set(sql, hit);
      return hit;
    }
    const prepared = await prepareChecked(this.conn, sql, selectOnly);
    this.statements.set(sql, prepared);
    if (this.statements.size > STATEMENTS_PER_CONNECTION) this.forget(this.statements.keys().next().value as string);
    return prepared;
  }

  forget(sql: string): void {
    this.statements.get(sql)?.destroySync();
    this.statements.delete(sql);
  }

  close(): void {
    for (const sql of [...this.statements.keys()]) this.forget(sql);
    this.conn.closeSync();
  }
}

/**
 * The SQL of one view: the chosen files of the snapshot, resolved against the tail when there is
 * one. Once `signal` is aborted, no further file is fetched.
 */
async function viewSql(spec: ViewSpec, signal?: AbortSignal): Promise<string> {
  const files = spec.files ? spec.snapshot.files.filter(spec.files) : spec.snapshot.files;
  const rel = await filesRelationSql(spec.storage, spec.snapshot, files, { signal });
  return spec.pending ? resolvedSql(rel, spec, spec.pending, signal) : rel;
}

/** `sql` with each view as a leading CTE (merged into the statement's own WITH, if it has one). */
async function withViews(views: Readonly<Record<string, ViewSpec>>, sql: string, signal: AbortSignal): Promise<string> {
  const ctes: string[] = [];
  for (const [name, spec] of Object.entries(views)) ctes.push(`${ident(name)} AS (${await viewSql(spec, signal)})`);
  if (ctes.length === 0) return sql;
  const own = /^\s*WITH(\s+RECURSIVE)?\s+/i.exec(sql);
  return own ? `WITH${own[1] ?? ''} ${ctes.join(', ')}, ${sql.slice(own[0].length)}` : `WITH ${ctes.join(', ')} ${sql}`;
}

/** Table rows superseded by newer tail rows are hidden; the newest non-tombstone tail row per key is added. */
async function resolvedSql(tableRel: string, spec: ViewSpec, p: PendingSpec, signal: AbortSignal | undefined): Promise<string> {
  const files = spec.files ? p.snapshot.files.filter(spec.files) : p.snapshot.files;
  const cols = spec.snapshot.schema.fields.map((f) => f.name);
  const tailRel = await filesRelationSql(p.storage, p.snapshot, files, {
    columns: [...cols, ...(p.deleteColumn && !cols.includes(p.deleteColumn) ? [p.deleteColumn] : [])].filter((c) => p.snapshot.schema.fields.some((f) => f.name === c)),
    signal,
  });
  const keyEq = (a: string, b: string) => p.keys.map((k) => `${a}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
  const v = ident(p.versionColumn);
  const isDelete = p.deleteColumn ? `t.${ident(p.deleteColumn)} IS NOT DISTINCT FROM '${p.deleteValue.replace(/'/g, "''")}'` : 'false';
  // A column the table gained before its tail did (silver evolves ahead of the fold that adds it
  // to the tail) reads as null from the tail's rows, as from the table's older files.
  const tailHas = new Set(p.snapshot.schema.fields.map((f) => f.name));
  const selectTail = spec.snapshot.schema.fields.map((f) => (tailHas.has(f.name) ? `t.${ident(f.name)}` : `NULL::${duckType(f.type)} AS ${ident(f.name)}`)).join(', ');
  return `WITH s AS (${tableRel}),
    t AS (SELECT * FROM (${tailRel}) QUALIFY row_number() OVER (PARTITION BY ${p.keys.map(ident).join(', ')} ORDER BY ${v} DESC) = 1)
    SELECT ${cols.map((c) => `s.${ident(c)}`).join(', ')} FROM s WHERE NOT EXISTS (SELECT 1 FROM t WHERE ${keyEq('t', 's')} AND t.${v} > s.${v})
    UNION ALL
    SELECT ${selectTail} FROM t WHERE NOT (${isDelete}) AND NOT EXISTS (SELECT 1 FROM s WHERE ${keyEq('s', 't')} AND s.${v} >= t.${v})`;
}

/** Per-query options of {@link LakeSession.query} and {@link LakeSession.queryJson}. */
export interface QueryOptions {
  /**
   * Interrupt the query after this many ms (DuckDB `interrupt()`, so it stops using CPU and
   * memory) and fail with LAKE_QUERY_TIMEOUT. The call settles only once DuckDB has stopped.
   */
  timeoutMs?: number;
}

/**
 * A result's rows as objects, values as JS (`bigint`, DuckDB value objects) or JSON-safe. Each
 * column is an own property: the client library assigns `row[name] = value`, and for a column
 * named `__proto__` (a name Delta allows) that set the row's prototype and the column vanished.
 */
function rowObjects(reader: DuckDBResultReader, values: 'js' | 'json'): Record<string, unknown>[] {
  const names = reader.deduplicatedColumnNames();
  if (!names.includes('__proto__')) return (values === 'js' ? reader.getRowObjectsJS() : reader.getRowObjectsJson()) as Record<string, unknown>[];
  const rows: unknown[][] = values === 'js' ? reader.getRowsJS() : reader.getRowsJson();
  return rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
}

/** A connection with table views; run queries, then close. */
export class LakeSession {
  constructor(
    private readonly conn: DuckDBConnection,
    private readonly selectOnly: boolean,
    private readonly lease?: FileLease,
  ) {}

  /** Runs one statement with parameters; rows as JS values (BIGINT → bigint, TIMESTAMPTZ → DuckDB value objects). */
  async query(sql: string, params?: QueryParams, options: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    return rowObjects(await this.run(sql, params, options), 'js');
  }

  /** Runs one statement with parameters; rows as JSON-safe values (BIGINT → string, timestamps → ISO strings). */
  async queryJson(sql: string, params?: QueryParams, options: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    return rowObjects(await this.run(sql, params, options), 'json');
  }

  /** Closes the connection (the views go with it) and lets the cache evict the files they read. */
  close(): void {
    this.conn.closeSync();
    this.lease?.release();
  }

  private run(sql: string, params: QueryParams | undefined, options: QueryOptions): Promise<DuckDBResultReader> {
    return runStatement(this.conn, options, () => prepareChecked(this.conn, sql, this.selectOnly), params);
  }
}

/** Prepares `sql`; with `selectOnly` (locked mode) refuses anything but a plain SELECT: COPY/ATTACH/EXPORT could write inside the lake. */
async function prepareChecked(conn: DuckDBConnection, sql: string, selectOnly: boolean): Promise<DuckDBPreparedStatement> {
  const prepared = await conn.prepare(sql);
  if (selectOnly && prepared.statementType !== StatementType.SELECT) {
    prepared.destroySync();
    throw lakeError('LAKE_QUERY_FAILED', 'only SELECT statements are allowed in a locked query session');
  }
  return prepared;
}

/**
 * Binds and runs a statement on `conn` under the timeout of `options`: DuckDB is interrupted at
 * the deadline and the call settles once it has stopped. DuckDB errors are translated here.
 */
async function runStatement(
  conn: DuckDBConnection,
  options: QueryOptions,
  prepare: () => Promise<DuckDBPreparedStatement>,
  params: QueryParams | undefined,
): Promise<DuckDBResultReader> {
  const { timeoutMs } = options;
  checkTimeout(timeoutMs);
  const started = performance.now();
  let timedOut = false;
  let repeat: NodeJS.Timeout | undefined;
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          // DuckDB forgets an interrupt that lands before execution starts (while the statement
          // is prepared, e.g. binding a long file list): the query then ran to its end, holding
          // its slot long after the caller's timeout. Repeated until the call settles.
          conn.interrupt();
          repeat = setInterval(() => conn.interrupt(), INTERRUPT_REPEAT_MS);
        }, timeoutMs);
  try {
    const prepared = await prepare();
    if (timedOut) throw timeoutError(timeoutMs as number, started);
    if (params) prepared.bind(params as never);
    return await prepared.runAndReadAll();
  } catch (err) {
    if ((err as { code?: string }).code) throw err;
    if (timedOut) throw timeoutError(timeoutMs as number, started, err);
    throw translateReadError('query', err);
  } finally {
    clearTimeout(timer);
    clearInterval(repeat);
  }
}

/** How often an interrupt is repeated once a statement's timeout has passed (see runStatement). */
const INTERRUPT_REPEAT_MS = 10;

function checkTimeout(timeoutMs: number | undefined): void {
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw lakeError('LAKE_INVALID_INPUT', `query timeoutMs must be a positive number of ms, got ${String(timeoutMs)}`);
  }
}

function timeoutError(timeoutMs: number, started: number, cause?: unknown) {
  return lakeError('LAKE_QUERY_TIMEOUT', `query interrupted after ${timeoutMs} ms (stopped after ${Math.round(performance.now() - started)} ms)`, { cause, details: { timeoutMs } });
}

/**
 * `work`, or LAKE_QUERY_TIMEOUT once `timeoutMs` passed. The work itself goes on (the caller may
 * tell it to start nothing more; a download under way finishes into the cache, where the next
 * read finds it); its later failure is left unreported.
 */
async function withinTimeout<T>(work: Promise<T>, timeoutMs: number | undefined): Promise<T> {
  if (timeoutMs === undefined) return work;
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(timeoutMs, started)), timeoutMs);
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

