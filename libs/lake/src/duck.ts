import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { lakeError } from './errors';

let shared: Promise<DuckDBInstance> | undefined;

/**
 * The process-wide DuckDB instance used for writing (one per process; connections per use).
 * Session time zone is UTC so TIMESTAMPTZ renders and casts in UTC (DELTA.md §3).
 */
export function sharedDuckDB(): Promise<DuckDBInstance> {
  shared ??= DuckDBInstance.create(':memory:').catch((err) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

/** Runs `fn` with a fresh connection on the shared instance, closing it afterwards. */
export async function withConnection<T>(fn: (conn: DuckDBConnection) => Promise<T>): Promise<T> {
  const conn = await (await sharedDuckDB()).connect();
  try {
    await conn.run(`SET TimeZone='UTC'`);
    return await fn(conn);
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

/** Wraps a DuckDB error (the one translation point for DuckDB's own errors). */
export function duckError(what: string, cause: unknown) {
  const message = cause instanceof Error ? cause.message : String(cause);
  return lakeError('LAKE_QUERY_FAILED', `${what}: ${message}`, { cause });
}
