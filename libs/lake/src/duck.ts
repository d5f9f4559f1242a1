import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { errorMessage, lakeError } from './errors';

let shared: Promise<DuckDBInstance> | undefined;

/**
 * The process-wide DuckDB instance used for writing (one per process; connections per use).
 * Session time zone is UTC so TIMESTAMPTZ renders and casts in UTC (DELTA.md §3).
 *
 * DuckDB's external file cache is off: it keeps the blocks of every file read in DuckDB's own
 * memory until memory_limit evicts them, and a writer reads mostly files it has just written
 * (new names every commit), which the OS page cache already holds. With it on, a process that
 * appends and merges small batches grew ~3 MB of RSS per commit (docs/bench/lake.md).
 */
export function sharedDuckDB(): Promise<DuckDBInstance> {
  shared ??= DuckDBInstance.create(':memory:', { enable_external_file_cache: 'false' }).catch((err) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

/** Resource bounds of the shared DuckDB instance (see {@link configureSharedDuckDB}). */
export interface DuckDBResourceOptions {
  /** DuckDB `memory_limit` in MiB: beyond it operators spill to `tempDirectory` or fail. */
  memoryLimitMb?: number;
  /** DuckDB `threads`; DuckDB's default (one per core) when omitted. */
  threads?: number;
  /** Where DuckDB spills what does not fit `memoryLimitMb`. */
  tempDirectory?: string;
  /**
   * DuckDB `max_temp_directory_size` in MiB: past it a query fails (the caller retries) instead of
   * spilling on; DuckDB's default is 90 % of the disk's free space, which a container's scratch
   * volume limit does not show (the kubelet evicts the pod instead).
   */
  maxSpillMb?: number;
  /** DuckDB's external file cache (`enable_external_file_cache`); off unless set (see {@link sharedDuckDB}). */
  externalFileCache?: boolean;
}

/**
 * Bounds the shared instance that writes tables and serves unlocked query engines. Without it
 * DuckDB may take 80 % of the machine's memory, far above a container's limit. Applies at once
 * to the running instance (every connection), so call it at start-up, before the first write.
 */
export async function configureSharedDuckDB(options: DuckDBResourceOptions): Promise<void> {
  const conn = await (await sharedDuckDB()).connect();
  try {
    if (options.memoryLimitMb !== undefined) await conn.run(`SET GLOBAL memory_limit=${sqlString(`${Math.floor(options.memoryLimitMb)}MB`)}`);
    if (options.threads !== undefined) await conn.run(`SET GLOBAL threads=${Math.max(1, Math.floor(options.threads))}`);
    if (options.tempDirectory !== undefined) await conn.run(`SET GLOBAL temp_directory=${sqlString(options.tempDirectory)}`);
    if (options.maxSpillMb !== undefined) await conn.run(`SET GLOBAL max_temp_directory_size=${sqlString(`${Math.floor(options.maxSpillMb)}MiB`)}`);
    if (options.externalFileCache !== undefined) await conn.run(`SET GLOBAL enable_external_file_cache=${options.externalFileCache}`);
  } finally {
    conn.closeSync();
  }
}

/**
 * Memory the shared instance's buffer manager holds now, bytes (`duckdb_memory()`: blocks of
 * tables, hash tables, Parquet readers and writers), so a process can tell DuckDB's share of its
 * native memory from the rest.
 */
export async function sharedDuckDBMemoryBytes(): Promise<number> {
  return withConnection(async (conn) => {
    const reader = await conn.runAndReadAll('SELECT COALESCE(sum(memory_usage_bytes), 0)::DOUBLE AS bytes FROM duckdb_memory()');
    return Number(reader.getRowObjects()[0]?.bytes ?? 0);
  });
}

/**
 * Runs `fn` with a fresh connection on the shared instance, closing it afterwards. A DuckDB error
 * that `fn` did not translate itself leaves as {@link duckError}'s (LAKE_OUT_OF_MEMORY or
 * LAKE_QUERY_FAILED), so no raw DuckDB error escapes a write.
 */
export async function withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const conn = await (await sharedDuckDB()).connect();
  try {
    await conn.run(`SET TimeZone='UTC'`);
    return await fn(conn);
  } catch (err) {
    throw isDuckDBError(err) ? duckError('DuckDB statement', err) : err;
  } finally {
    conn.closeSync();
  }
}

/** A SQL string literal. */
export function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** A quoted SQL identifier (any characters allowed). */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A SQL list literal of strings, e.g. for `read_parquet([...])`. */
export function sqlStringList(values: readonly string[]): string {
  return `[${values.map(sqlString).join(', ')}]`;
}

/**
 * Whether `err` is DuckDB's own, untranslated: node-api raises them without a `code`, with the
 * error type first in the message ("Binder Error: ...", "Out of Memory Error: ...").
 */
export function isDuckDBError(err: unknown): boolean {
  return (err as { code?: unknown } | undefined)?.code === undefined && /^[A-Z][A-Za-z ]* Error: /.test(errorMessage(err));
}

/**
 * A DuckDB error in the lake's words: out of memory is LAKE_OUT_OF_MEMORY (retryable, whatever
 * the statement was doing); anything else is `code`. `what` says which step failed.
 */
export function duckError(what: string, cause: unknown, code: 'LAKE_QUERY_FAILED' | 'LAKE_INVALID_INPUT' = 'LAKE_QUERY_FAILED') {
  const message = errorMessage(cause);
  // DuckDB's error types prefix the message ("Out of Memory Error: could not allocate block ...").
  if (/^Out of Memory Error\b/.test(message)) return lakeError('LAKE_OUT_OF_MEMORY', `${what}: ${message}`, { cause });
  return lakeError(code, `${what}: ${message}`, { cause });
}
