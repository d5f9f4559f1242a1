import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { BOOLEAN, DOUBLE, DuckDBDataChunk, VARCHAR, type DuckDBConnection, type DuckDBType } from '@duckdb/node-api';
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
export async function ingestSource(
  conn: DuckDBConnection,
  fields: readonly DeltaField[],
  source: WriteSource,
  scratchDir: string,
  /**
   * `compact: false` stages as before dictionary codes and DOUBLE decimals (every text value its
   * own native call): the same-run baseline of tools/bench/lake/ingest-profile.ts.
   */
  tuning: { compact?: boolean } = {},
): Promise<string> {
  const table = `__lake_in_${randomUUID().replace(/-/g, '')}`;
  const casts = fields.map((f) => {
    const c = ident(f.name);
    if ('rows' in source && f.type === 'binary') return `from_base64(${c}) AS ${c}`;
    return `CAST(${c} AS ${duckType(f.type)}) AS ${c}`;
  });
  try {
    if ('sql' in source) {
      await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${casts.join(', ')} FROM (${source.sql})`);
    } else if (fields.every((f) => typeof f.type === 'string' && f.type !== 'binary')) {
      await appendFlatRows(conn, table, fields, source.rows, tuning.compact ?? true);
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

type Staging = { type: DuckDBType; sql: string; cast: (v: unknown) => unknown; select: (col: string) => string };

const CHUNK_ROWS = 2048;

/**
 * Flat schemas: rows go column-wise through DuckDB's appender into loosely typed staging columns
 * (DOUBLE, VARCHAR, BOOLEAN), then one SQL cast to the schema types — several times faster than
 * serialising JSON, and DuckDB's casts decide what is valid.
 */
async function appendFlatRows(conn: DuckDBConnection, table: string, fields: readonly DeltaField[], rows: readonly Record<string, unknown>[], compact: boolean): Promise<void> {
  const staging = fields.map((f) => (compact ? dictionaryFor(f, rows, stagingFor(f, rows, true)) : stagingFor(f, rows, false)));
  const stage = `${table}_stage`;
  await conn.run(`CREATE TEMP TABLE ${stage} (${fields.map((f, i) => `${ident(f.name)} ${staging[i].sql}`).join(', ')})`);
  try {
    const appender = await conn.createAppender(stage, 'main', 'temp');
    try {
      const types = staging.map((s) => s.type);
      for (let off = 0; off < rows.length; off += CHUNK_ROWS) {
        const n = Math.min(CHUNK_ROWS, rows.length - off);
        const chunk = DuckDBDataChunk.create(types, n);
        fields.forEach((f, c) => {
          const values = new Array(n);
          const cast = staging[c].cast;
          for (let r = 0; r < n; r++) {
            const v = rows[off + r][f.name];
            values[r] = v === null || v === undefined ? null : cast(v);
          }
          chunk.setColumnValues(c, values);
        });
        appender.appendDataChunk(chunk);
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
    await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${fields.map((f, i) => `${staging[i].select(ident(f.name))} AS ${ident(f.name)}`).join(', ')} FROM ${stage}`);
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${stage}`);
  }
}

const asString = (v: unknown) => (v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v));

function stagingFor(f: DeltaField, rows: readonly Record<string, unknown>[], compact: boolean): Staging {
  const target = duckType(f.type);
  const all = (test: (v: unknown) => boolean) => rows.every((r) => r[f.name] === null || r[f.name] === undefined || test(r[f.name]));
  const varchar: Staging = { type: VARCHAR, sql: 'VARCHAR', cast: asString, select: (c) => `CAST(${c} AS ${target})` };
  switch (f.type) {
    case 'string':
      return { ...varchar, select: (c) => c };
    case 'long':
    case 'integer':
    case 'short':
    case 'byte': {
      const bad = rows.find((r) => typeof r[f.name] === 'number' && !Number.isInteger(r[f.name]));
      if (bad) throw lakeError('LAKE_INVALID_INPUT', `column ${f.name} is ${f.type} but got ${String(bad[f.name])}`);
      if (all((v) => typeof v === 'number')) return { type: DOUBLE, sql: 'DOUBLE', cast: (v) => v, select: (c) => `CAST(${c} AS ${target})` };
      return varchar;
    }
    case 'float':
    case 'double':
      return all((v) => typeof v === 'number') ? { type: DOUBLE, sql: 'DOUBLE', cast: (v) => v, select: (c) => `CAST(${c} AS ${target})` } : varchar;
    case 'boolean':
      return all((v) => typeof v === 'boolean') ? { type: BOOLEAN, sql: 'BOOLEAN', cast: (v) => v, select: (c) => c } : varchar;
    case 'timestamp':
      // Dates travel as epoch milliseconds (exact in a double), strings are parsed by DuckDB.
      return all((v) => v instanceof Date)
        ? { type: DOUBLE, sql: 'DOUBLE', cast: (v) => (v as Date).getTime(), select: (c) => `CAST(epoch_ms(CAST(${c} AS BIGINT)) AS TIMESTAMPTZ)` }
        : varchar;
    case 'date':
      return { ...varchar, cast: (v) => (v instanceof Date ? v.toISOString().slice(0, 10) : String(v)) };
    default: {
      // Decimals whose digits a double holds exactly travel as DOUBLE (DuckDB rounds to the
      // scale, which restores the exact value); anything else as exact digit strings.
      const scale = /^decimal\(\d+,\s*(\d+)\)$/.exec(typeof f.type === 'string' ? f.type : '')?.[1];
      if (compact && scale !== undefined && all((v) => (typeof v === 'string' || typeof v === 'number') && exactInDouble(String(v), Number(scale)))) {
        return { type: DOUBLE, sql: 'DOUBLE', cast: (v) => Number(v), select: (c) => `CAST(${c} AS ${target})` };
      }
      return varchar;
    }
  }
}

const PLAIN_DECIMAL = /^[+-]?(\d+)(?:\.(\d+))?$/;

/** A plain decimal literal of at most 15 significant digits and at most `scale` fraction digits. */
function exactInDouble(text: string, scale: number): boolean {
  const m = PLAIN_DECIMAL.exec(text);
  if (!m) return false;
  const fraction = m[2] ?? '';
  return fraction.length <= scale && m[1].replace(/^0+/, '').length + fraction.length <= 15;
}

/** Most distinct values a column may have to travel as dictionary codes. */
const MAX_DICTIONARY = 256;

/**
 * Low-cardinality text columns (status, op, currency…) travel as DOUBLE codes into a list literal
 * of their distinct values: the appender copies a DOUBLE vector in one native call, whereas every
 * VARCHAR value costs a native call of its own (the dominant cost of JS-row ingestion).
 */
function dictionaryFor(f: DeltaField, rows: readonly Record<string, unknown>[], staging: Staging): Staging {
  if (staging.type !== VARCHAR || rows.length < 4 * MAX_DICTIONARY) return staging;
  const codes = new Map<string, number>();
  for (const r of rows) {
    const v = r[f.name];
    if (v === null || v === undefined) continue;
    const text = staging.cast(v) as string;
    if (!codes.has(text)) {
      if (codes.size === MAX_DICTIONARY) return staging;
      codes.set(text, codes.size);
    }
  }
  const list = `[${[...codes.keys()].map(sqlString).join(', ')}]::VARCHAR[]`;
  return {
    type: DOUBLE,
    sql: 'DOUBLE',
    cast: (v) => codes.get(staging.cast(v) as string),
    select: (c) => staging.select(`(${list})[CAST(${c} AS INTEGER) + 1]`),
  };
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
