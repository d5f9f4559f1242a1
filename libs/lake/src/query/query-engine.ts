import { DuckDBConnection, DuckDBInstance, StatementType, type DuckDBValue } from '@duckdb/node-api';
import * as path from 'node:path';
import { ident, sharedDuckDB } from '../duck';
import { lakeError } from '../errors';
import type { LiveFile, Snapshot } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { filesRelationSql, translateReadError } from '../table/relation';

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
    const conn = await this.instance.connect();
    try {
      // A locked engine is UTC instance-wide and refuses SET (a failed statement per session).
      if (!this.locked) await conn.run(`SET TimeZone='UTC'`);
      for (const [name, spec] of Object.entries(views)) {
        const files = spec.files ? spec.snapshot.files.filter(spec.files) : spec.snapshot.files;
        const rel = await filesRelationSql(spec.storage, spec.snapshot.schema, spec.snapshot.partitionColumns, files);
        await conn.run(`CREATE TEMP VIEW ${ident(name)} AS ${spec.pending ? await resolvedSql(rel, spec, spec.pending) : rel}`);
      }
    } catch (err) {
      conn.closeSync();
      throw (err as { code?: string }).code ? err : translateReadError('opening query session', err);
    }
    return new LakeSession(conn, this.locked);
  }
}

/** Table rows superseded by newer tail rows are hidden; the newest non-tombstone tail row per key is added. */
async function resolvedSql(tableRel: string, spec: ViewSpec, p: PendingSpec): Promise<string> {
  const files = spec.files ? p.snapshot.files.filter(spec.files) : p.snapshot.files;
  const cols = spec.snapshot.schema.fields.map((f) => f.name);
  const tailRel = await filesRelationSql(p.storage, p.snapshot.schema, p.snapshot.partitionColumns, files, {
    columns: [...cols, ...(p.deleteColumn && !cols.includes(p.deleteColumn) ? [p.deleteColumn] : [])].filter((c) => p.snapshot.schema.fields.some((f) => f.name === c)),
  });
  const keyEq = (a: string, b: string) => p.keys.map((k) => `${a}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
  const v = ident(p.versionColumn);
  const isDelete = p.deleteColumn ? `t.${ident(p.deleteColumn)} IS NOT DISTINCT FROM '${p.deleteValue.replace(/'/g, "''")}'` : 'false';
  const select = (alias: string) => cols.map((c) => `${alias}.${ident(c)}`).join(', ');
  return `WITH s AS (${tableRel}),
    t AS (SELECT * FROM (${tailRel}) QUALIFY row_number() OVER (PARTITION BY ${p.keys.map(ident).join(', ')} ORDER BY ${v} DESC) = 1)
    SELECT ${select('s')} FROM s WHERE NOT EXISTS (SELECT 1 FROM t WHERE ${keyEq('t', 's')} AND t.${v} > s.${v})
    UNION ALL
    SELECT ${select('t')} FROM t WHERE NOT (${isDelete}) AND NOT EXISTS (SELECT 1 FROM s WHERE ${keyEq('s', 't')} AND s.${v} >= t.${v})`;
}

/** Per-query options of {@link LakeSession.query} and {@link LakeSession.queryJson}. */
export interface QueryOptions {
  /**
   * Interrupt the query after this many ms (DuckDB `interrupt()`, so it stops using CPU and
   * memory) and fail with LAKE_QUERY_TIMEOUT. The call settles only once DuckDB has stopped.
   */
  timeoutMs?: number;
}

/** A connection with table views; run queries, then close. */
export class LakeSession {
  constructor(
    private readonly conn: DuckDBConnection,
    private readonly selectOnly: boolean,
  ) {}

  /** Runs one statement with parameters; rows as JS values (BIGINT → bigint, TIMESTAMPTZ → DuckDB value objects). */
  async query(sql: string, params?: QueryParams, options: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    const reader = await this.run(sql, params, options);
    return reader.getRowObjectsJS() as Record<string, unknown>[];
  }

  /** Runs one statement with parameters; rows as JSON-safe values (BIGINT → string, timestamps → ISO strings). */
  async queryJson(sql: string, params?: QueryParams, options: QueryOptions = {}): Promise<Record<string, unknown>[]> {
    const reader = await this.run(sql, params, options);
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  }

  /** Closes the connection (the views go with it). */
  close(): void {
    this.conn.closeSync();
  }

  private async run(sql: string, params: QueryParams | undefined, options: QueryOptions) {
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw lakeError('LAKE_INVALID_INPUT', `query timeoutMs must be a positive number of ms, got ${String(timeoutMs)}`);
    }
    const started = performance.now();
    let timedOut = false;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            this.conn.interrupt();
          }, timeoutMs);
    try {
      const prepared = await this.conn.prepare(sql);
      // Only plain SELECTs in locked mode: COPY/ATTACH/EXPORT could write inside the lake.
      if (this.selectOnly && prepared.statementType !== StatementType.SELECT) {
        throw lakeError('LAKE_QUERY_FAILED', 'only SELECT statements are allowed in a locked query session');
      }
      if (params) prepared.bind(params as never);
      return await prepared.runAndReadAll();
    } catch (err) {
      if ((err as { code?: string }).code) throw err;
      if (timedOut) {
        throw lakeError('LAKE_QUERY_TIMEOUT', `query interrupted after ${timeoutMs} ms (stopped after ${Math.round(performance.now() - started)} ms)`, {
          cause: err,
          details: { timeoutMs },
        });
      }
      throw translateReadError('query', err);
    } finally {
      clearTimeout(timer);
    }
  }
}
