import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, sqlString } from '../duck';
import { lakeError } from '../errors';
import { duckType, type DeltaField } from './schema';

/**
 * Rows to write. Either JS objects keyed by column name (numbers, bigint, strings, booleans,
 * Date or ISO strings for timestamps, `YYYY-MM-DD` for dates, Uint8Array for binary, arrays,
 * plain objects for maps/structs; missing keys are null), or a DuckDB SELECT run by the lake
 * that yields the columns by name (e.g. over `read_parquet(...)` of local files).
 */
export type WriteSource = { rows: readonly Record<string, unknown>[] } | { sql: string };

/**
 * Loads a source into a new temp table with exactly `fields` (typed), returning its name. The
 * caller drops it. Conversion failures are LAKE_INVALID_INPUT.
 */
export async function ingestSource(conn: DuckDBConnection, fields: readonly DeltaField[], source: WriteSource, scratchDir: string): Promise<string> {
  const table = `__lake_in_${randomUUID().replace(/-/g, '')}`;
  const casts = fields.map((f) => {
    const c = ident(f.name);
    if ('rows' in source && f.type === 'binary') return `from_base64(${c}) AS ${c}`;
    return `CAST(${c} AS ${duckType(f.type)}) AS ${c}`;
  });
  try {
    if ('sql' in source) {
      await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${casts.join(', ')} FROM (${source.sql})`);
    } else {
      await fs.mkdir(scratchDir, { recursive: true });
      const file = path.join(scratchDir, `${table}.ndjson`);
      try {
        await fs.writeFile(file, rowsToNdjson(source.rows));
        const columns = `{${fields.map((f) => `${sqlString(f.name)}: ${sqlString(f.type === 'binary' ? 'VARCHAR' : duckType(f.type))}`).join(', ')}}`;
        const from = source.rows.length === 0 ? `(SELECT ${fields.map((f) => `NULL::${f.type === 'binary' ? 'VARCHAR' : duckType(f.type)} AS ${ident(f.name)}`).join(', ')} WHERE false)` : `read_json(${sqlString(file)}, format='newline_delimited', columns=${columns}, maximum_object_size=1073741824)`;
        await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${casts.join(', ')} FROM ${from}`);
      } finally {
        await fs.rm(file, { force: true });
      }
    }
  } catch (cause) {
    throw lakeError('LAKE_INVALID_INPUT', `rows do not fit the table schema: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const required = fields.filter((f) => !f.nullable);
  if (required.length > 0) {
    const result = await conn.runAndReadAll(`SELECT ${required.map((f) => `count(*) FILTER (WHERE ${ident(f.name)} IS NULL)`).join(', ')} FROM ${table}`);
    const counts = result.getRows()[0].map(Number);
    const bad = required.filter((_, i) => counts[i] > 0).map((f) => f.name);
    if (bad.length > 0) {
      await conn.run(`DROP TABLE ${table}`);
      throw lakeError('LAKE_INVALID_INPUT', `null values in non-nullable column(s) ${bad.join(', ')}`, { details: { columns: bad } });
    }
  }
  return table;
}

function rowsToNdjson(rows: readonly Record<string, unknown>[]): string {
  const parts: string[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) parts[i] = JSON.stringify(rows[i], replacer);
  return parts.join('\n') + '\n';
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  return value;
}
