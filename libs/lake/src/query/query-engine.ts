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
      await conn.run(`SET TimeZone='UTC'`).catch(() => undefined); // locked engines already are UTC
      for (const [name, spec] of Object.entries(views)) {
        const files = spec.files ? spec.snapshot.files.filter(spec.files) : spec.snapshot.files;
        const rel = await filesRelationSql(spec.storage, spec.snapshot.schema, spec.snapshot.partitionColumns, files);
        await conn.run(`CREATE TEMP VIEW ${ident(name)} AS ${rel}`);
      }
    } catch (err) {
      conn.closeSync();
      throw (err as { code?: string }).code ? err : translateReadError('opening query session', err);
    }
    return new LakeSession(conn, this.locked);
  }
}

/** A connection with table views; run queries, then close. */
export class LakeSession {
  constructor(
    private readonly conn: DuckDBConnection,
    private readonly selectOnly: boolean,
  ) {}

  /** Runs one statement with parameters; rows as JS values (BIGINT → bigint, TIMESTAMPTZ → DuckDB value objects). */
  async query(sql: string, params?: QueryParams): Promise<Record<string, unknown>[]> {
    const reader = await this.run(sql, params);
    return reader.getRowObjectsJS() as Record<string, unknown>[];
  }

  /** Runs one statement with parameters; rows as JSON-safe values (BIGINT → string, timestamps → ISO strings). */
  async queryJson(sql: string, params?: QueryParams): Promise<Record<string, unknown>[]> {
    const reader = await this.run(sql, params);
    return reader.getRowObjectsJson() as Record<string, unknown>[];
  }

  /** Closes the connection (the views go with it). */
  close(): void {
    this.conn.closeSync();
  }

  private async run(sql: string, params?: QueryParams) {
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
      throw translateReadError('query', err);
    }
  }
}
