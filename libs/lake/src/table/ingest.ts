import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { BOOLEAN, DOUBLE, DuckDBDataChunk, LIST, VARCHAR, listValue, type DuckDBConnection, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import { isSluiceError } from '@sluice/errors';
import { duckError, ident, sqlString } from '../duck';
import { errorMessage, lakeError } from '../errors';
import { translateReadError } from './relation';
import { duckType, type DeltaField, type DeltaType } from './schema';

/**
 * Rows to write. One of:
 * - `rows`: JS objects keyed by column name (numbers, bigint, strings, booleans; for timestamps a
 *   Date, an ISO string or an integer number of epoch milliseconds; `YYYY-MM-DD` for dates,
 *   Uint8Array for binary, arrays, plain objects for maps/structs; missing keys are null);
 * - `columns`: the same values column by column, `rowCount` rows: an array per column name, each
 *   `rowCount` long; a schema column without one is null, a name the schema lacks is refused.
 *   Cheaper than row objects for a writer that builds its values per column;
 * - `sql`: a DuckDB SELECT run by the lake that yields the columns by name (e.g. over
 *   `read_parquet(...)` of local files).
 */
export type WriteSource = { rows: readonly Record<string, unknown>[] } | ColumnarSource | { sql: string };

/** The `columns` form of {@link WriteSource}. */
export interface ColumnarSource {
  readonly columns: Readonly<Record<string, readonly unknown[]>>;
  readonly rowCount: number;
}

/**
 * Loads a source into a new temp table with exactly `fields` (typed), returning its name. The
 * caller drops it. Conversion failures are LAKE_INVALID_INPUT; running out of memory is
 * LAKE_OUT_OF_MEMORY; a staging file that cannot be written is LAKE_STORAGE_UNAVAILABLE.
 */
export async function ingestSource(
  conn: DuckDBConnection,
  fields: readonly DeltaField[],
  source: WriteSource,
  scratchDir: string,
): Promise<string> {
  const table = `__lake_in_${randomUUID().replace(/-/g, '')}`;
  const casts = fields.map((f) => {
    const c = ident(f.name);
    if (!('sql' in source) && f.type === 'binary') return `from_base64(${c}) AS ${c}`;
    return `CAST(${c} AS ${duckType(f.type)}) AS ${c}`;
  });
  try {
    if ('sql' in source) {
      await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${casts.join(', ')} FROM (${source.sql})`);
    } else if (fields.every((f) => typeof f.type === 'string' && f.type !== 'binary')) {
      const [columns, rowCount] = 'rows' in source ? [readColumns(fields, source.rows), source.rows.length] : [sourceColumns(fields, source), source.rowCount];
      await appendFlatColumns(conn, table, fields, columns, rowCount);
    } else {
      const rows = 'rows' in source ? source.rows : rowsOf(fields, source);
      await fs.mkdir(scratchDir, { recursive: true });
      const file = path.join(scratchDir, `${table}.ndjson`);
      try {
        await fs.writeFile(file, rowsToNdjson(fields, rows));
        const columns = `{${fields.map((f) => `${sqlString(f.name)}: ${sqlString(f.type === 'binary' ? 'VARCHAR' : duckType(f.type))}`).join(', ')}}`;
        const from = rows.length === 0 ? `(SELECT ${fields.map((f) => `NULL::${f.type === 'binary' ? 'VARCHAR' : duckType(f.type)} AS ${ident(f.name)}`).join(', ')} WHERE false)` : `read_json(${sqlString(file)}, format='newline_delimited', columns=${columns}, maximum_object_size=1073741824)`;
        await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${casts.join(', ')} FROM ${from}`);
      } finally {
        await fs.rm(file, { force: true });
      }
    }
  } catch (cause) {
    // The lake's own refusals (LAKE_INVALID_INPUT from staging) go as they are; a staging file
    // that could not be written (ENOSPC, EACCES) is the machine's fault, not the rows'.
    if (isSluiceError(cause)) throw cause;
    const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
    if (typeof errno === 'string') {
      throw lakeError('LAKE_STORAGE_UNAVAILABLE', `staging rows in ${scratchDir} failed: ${errorMessage(cause)}`, { cause, details: { errno } });
    }
    // A SQL source reads the caller's files (gold reads bronze's): one vacuumed meanwhile is
    // LAKE_DATA_FILE_MISSING naming it, not a fault of the rows.
    if ('sql' in source) throw translateReadError('loading rows', cause, 'LAKE_INVALID_INPUT');
    throw duckError('loading rows', cause, 'LAKE_INVALID_INPUT');
  }
  // A null where the schema says none may be (a column, or a field, element or map value inside
  // one): other readers refuse the whole table for it (delta-rs: "unmasked nulls").
  const checks = fields.flatMap((f) => {
    const nulls = [...(f.nullable ? [] : [`${ident(f.name)} IS NULL`]), ...nestedNulls(ident(f.name), f.type, 0)];
    return nulls.length > 0 ? [{ name: f.name, sql: nulls.join(' OR ') }] : [];
  });
  if (checks.length > 0) {
    const result = await conn.runAndReadAll(`SELECT ${checks.map((c) => `count(*) FILTER (WHERE ${c.sql})`).join(', ')} FROM ${table}`);
    const counts = result.getRows()[0].map(Number);
    const bad = checks.filter((_, i) => counts[i] > 0).map((c) => c.name);
    if (bad.length > 0) {
      await conn.run(`DROP TABLE ${table}`);
      throw lakeError('LAKE_INVALID_INPUT', `null values where the schema allows none, in column(s) ${bad.join(', ')}`, { details: { columns: bad } });
    }
  }
  return table;
}

/**
 * SQL conditions, true where a value `expr` of `type` holds a null inside it that the type
 * forbids: a non-nullable struct field of a present struct, an element of an array without
 * `containsNull`, a map value without `valueContainsNull`, at any depth. `depth` names the
 * lambda variables apart.
 */
function nestedNulls(expr: string, type: DeltaType, depth: number): string[] {
  if (typeof type === 'string') return [];
  if (type.type === 'struct') {
    return type.fields.flatMap((f) => {
      const child = `struct_extract(${expr}, ${sqlString(f.name)})`;
      const own = f.nullable ? [] : [`(${expr} IS NOT NULL AND ${child} IS NULL)`];
      return [...own, ...nestedNulls(child, f.type, depth)];
    });
  }
  const [items, itemType, itemsNullable] = type.type === 'array' ? [expr, type.elementType, type.containsNull] : [`map_values(${expr})`, type.valueType, type.valueContainsNull];
  const x = `x${depth}`;
  const inner = [...(itemsNullable ? [] : [`${x} IS NULL`]), ...nestedNulls(x, itemType, depth + 1)];
  return inner.length > 0 ? [`coalesce(len(list_filter(${items}, ${x} -> ${inner.join(' OR ')})), 0) > 0`] : [];
}

/**
 * How one column of JS rows travels into DuckDB. Rows go in slices; each slice of a column is
 * one stage value: a list of numbers or booleans (node-api copies the list's items into the
 * vector in one native call), or the slice's text values joined into one string and split again
 * in SQL. One native call per slice instead of one per text value, which was the dominant cost
 * of JS-row ingestion (docs/bench/lake.md).
 */
interface Staging {
  /** Type of the stage column. */
  readonly type: DuckDBType;
  /** The stage value of rows [from, to) of the column. */
  readonly slice: (from: number, to: number) => DuckDBValue;
  /** SQL over the stage column giving one value per row (unnested, still loosely typed). */
  readonly unnest: (col: string) => string;
  /** SQL turning an unnested value into the column's type. */
  readonly cast: (col: string) => string;
}

/** Rows per stage row. */
const SLICE_ROWS = 8192;
/** Joins a slice's text values; a column whose values contain it travels as a list instead. */
const SEPARATOR = '\x1f';
/** Stands for null among joined text values; a column whose values contain it travels as a list. */
const NULL_TEXT = '\x1e';
/** Longest joined slice; a column with more text in one slice travels as a list. */
const MAX_JOINED_CHARS = 32 * 1024 * 1024;

/**
 * The schema's columns of a columnar source, in field order (a missing one all null). A column
 * the schema lacks or an array of another length is LAKE_INVALID_INPUT: rows would be misaligned.
 */
function sourceColumns(fields: readonly DeltaField[], source: ColumnarSource): (readonly unknown[])[] {
  const { columns, rowCount } = source;
  if (!Number.isSafeInteger(rowCount) || rowCount < 0) throw lakeError('LAKE_INVALID_INPUT', `rowCount must be a non-negative integer, got ${String(rowCount)}`);
  const known = new Set(fields.map((f) => f.name));
  for (const [name, values] of Object.entries(columns)) {
    if (!known.has(name)) throw lakeError('LAKE_INVALID_INPUT', `column ${JSON.stringify(name)} is not in the table schema`, { details: { column: name } });
    if (values.length !== rowCount) throw lakeError('LAKE_INVALID_INPUT', `column ${JSON.stringify(name)} has ${values.length} values for ${rowCount} rows`, { details: { column: name } });
  }
  return fields.map((f) => (Object.hasOwn(columns, f.name) ? columns[f.name] : new Array<unknown>(rowCount).fill(null)));
}

/** A columnar source as row objects (for the schemas that go through NDJSON). */
function rowsOf(fields: readonly DeltaField[], source: ColumnarSource): Record<string, unknown>[] {
  const columns = sourceColumns(fields, source);
  return Array.from({ length: source.rowCount }, (_, r) => Object.fromEntries(fields.map((f, c) => [f.name, columns[c][r]])));
}

/**
 * Flat schemas: each column (rows are read into columns by generated code first) is staged in
 * slices (see {@link Staging}) into a one-row-per-slice table, and one SQL statement unnests the
 * slices in lockstep and casts to the schema types — DuckDB's casts decide what is valid.
 */
async function appendFlatColumns(conn: DuckDBConnection, table: string, fields: readonly DeltaField[], columns: readonly (readonly unknown[])[], rowCount: number): Promise<void> {
  const staging = fields.map((f, i) => stagingFor(f, columns[i]));
  const stage = `${table}_stage`;
  await conn.run(`CREATE TEMP TABLE ${stage} (${fields.map((_, i) => `c${i} ${staging[i].type.toString()}`).join(', ')})`);
  try {
    const slices = Math.ceil(rowCount / SLICE_ROWS);
    if (slices > 0) {
      const chunk = DuckDBDataChunk.create(staging.map((s) => s.type), slices);
      staging.forEach((s, c) => {
        const values: DuckDBValue[] = new Array(slices);
        for (let k = 0; k < slices; k++) values[k] = s.slice(k * SLICE_ROWS, Math.min((k + 1) * SLICE_ROWS, rowCount));
        chunk.setColumnValues(c, values);
      });
      const appender = await conn.createAppender(stage, 'main', 'temp');
      try {
        appender.appendDataChunk(chunk);
        appender.flushSync();
      } finally {
        appender.closeSync();
      }
    }
    const unnested = staging.map((s, i) => `${s.unnest(`c${i}`)} AS c${i}`).join(', ');
    const typed = fields.map((f, i) => `${staging[i].cast(`c${i}`)} AS ${ident(f.name)}`).join(', ');
    await conn.run(`CREATE TEMP TABLE ${table} AS SELECT ${typed} FROM (SELECT ${unnested} FROM ${stage})`);
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${stage}`);
  }
  // Every slice's lists have its row count, so the unnest pairs them row by row; a mismatch
  // would pad with nulls and mix rows. Cheap to rule out.
  const count = Number((await conn.runAndReadAll(`SELECT count(*) FROM ${table}`)).getRows()[0][0]);
  if (count !== rowCount) throw new Error(`staging produced ${count} rows from ${rowCount}`);
}

type ColumnReader = (rows: readonly unknown[], c: unknown[][]) => void;
/** One compiled reader per column list (a handful of table schemas per process). */
const columnReaders = new Map<string, ColumnReader>();

/**
 * The rows' values column by column, read by generated code that names each field as a constant
 * (one monomorphic property load per value; a loop over field names made every load a keyed
 * lookup by a varying name). Names enter the code only as JSON string literals.
 */
function readColumns(fields: readonly DeltaField[], rows: readonly Record<string, unknown>[]): unknown[][] {
  const body = fields.map((f, i) => `c[${i}][r] = row[${JSON.stringify(f.name)}];`).join(' ');
  let read = columnReaders.get(body);
  if (read === undefined) {
    read = new Function('rows', 'c', `for (let r = 0; r < rows.length; r++) { const row = rows[r]; ${body} }`) as ColumnReader;
    columnReaders.set(body, read);
  }
  const columns = fields.map(() => new Array<unknown>(rows.length));
  read(rows, columns);
  return columns;
}

const asString = (v: unknown) => (v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v));
const isNull = (v: unknown) => v === null || v === undefined;

function stagingFor(f: DeltaField, values: readonly unknown[]): Staging {
  const target = duckType(f.type);
  const all = (test: (v: unknown) => boolean) => values.every((v) => isNull(v) || test(v));
  const castTo = (c: string) => `CAST(${c} AS ${target})`;
  const number = (toNumber: (v: unknown) => number, cast: (c: string) => string) => listStaging(DOUBLE, values, toNumber, cast);
  const text = (toText: (v: unknown) => string, cast: (c: string) => string) => textStaging(values, toText, cast);
  switch (f.type) {
    case 'string':
      return text(asString, (c) => c);
    case 'long':
    case 'integer':
    case 'short':
    case 'byte': {
      const bad = values.find((v) => typeof v === 'number' && !Number.isInteger(v));
      if (bad !== undefined) throw lakeError('LAKE_INVALID_INPUT', `column ${f.name} is ${f.type} but got ${String(bad)}`);
      return all((v) => typeof v === 'number') ? number(Number, castTo) : text(asString, castTo);
    }
    case 'float':
    case 'double':
      return all((v) => typeof v === 'number') ? number(Number, castTo) : text(asString, castTo);
    case 'boolean':
      return all((v) => typeof v === 'boolean') ? listStaging(BOOLEAN, values, Boolean, (c) => c) : text(asString, castTo);
    case 'timestamp':
      // Dates and epoch-millisecond numbers travel as epoch milliseconds (exact in a double);
      // strings are parsed by DuckDB, numbers and Dates among them go as ISO text. Either way a
      // number that is not whole epoch milliseconds, or an invalid Date, is refused.
      return all((v) => v instanceof Date || typeof v === 'number')
        ? number((v) => epochMsOf(f.name, v as number | Date), (c) => `CAST(epoch_ms(CAST(${c} AS BIGINT)) AS TIMESTAMPTZ)`)
        : text((v) => (typeof v === 'number' || v instanceof Date ? timestampText(f.name, v) : asString(v)), castTo);
    case 'date':
      return text((v) => (v instanceof Date ? v.toISOString().slice(0, 10) : String(v)), castTo);
    default: {
      // Decimals whose digits a double holds exactly travel as DOUBLE (DuckDB rounds to the
      // scale, which restores the exact value); anything else as exact digit strings.
      const scale = /^decimal\(\d+,\s*(\d+)\)$/.exec(typeof f.type === 'string' ? f.type : '')?.[1];
      if (scale !== undefined && all((v) => (typeof v === 'string' || typeof v === 'number') && exactInDouble(String(v), Number(scale)))) return number(Number, castTo);
      return text(asString, castTo);
    }
  }
}

/** Each slice as a list of numbers or booleans (node-api copies a list's items in one native call). */
function listStaging(item: typeof DOUBLE | typeof BOOLEAN, values: readonly unknown[], convert: (v: unknown) => unknown, cast: (c: string) => string): Staging {
  return {
    type: LIST(item),
    slice: (from, to) => {
      const items = new Array<DuckDBValue>(to - from);
      for (let r = from; r < to; r++) items[r - from] = isNull(values[r]) ? null : (convert(values[r]) as DuckDBValue);
      return listValue(items);
    },
    unnest: (c) => `unnest(${c})`,
    cast,
  };
}

/**
 * Each slice's text values joined with {@link SEPARATOR}, nulls as {@link NULL_TEXT}; when a
 * value holds either character, a list of strings instead (each value its own native call:
 * slower, exact).
 */
function textStaging(values: readonly unknown[], toText: (v: unknown) => string, cast: (c: string) => string): Staging {
  const texts = new Array<string | null>(values.length);
  const sliceChars = new Array<number>(Math.ceil(values.length / SLICE_ROWS)).fill(0);
  let joinable = true;
  for (let r = 0; r < values.length; r++) {
    const v = values[r];
    const t = isNull(v) ? null : typeof v === 'string' ? v : toText(v);
    if (t !== null) {
      if (joinable && (t.indexOf(SEPARATOR) >= 0 || t.indexOf(NULL_TEXT) >= 0)) joinable = false;
      sliceChars[Math.floor(r / SLICE_ROWS)] += t.length;
    }
    texts[r] = t;
  }
  // Long values would make one huge string per slice (V8 strings stop at ~2^29 characters).
  if (!joinable || sliceChars.some((n) => n > MAX_JOINED_CHARS)) return { type: LIST(VARCHAR), slice: (from, to) => listValue(texts.slice(from, to)), unnest: (c) => `unnest(${c})`, cast };
  return {
    type: VARCHAR,
    slice: (from, to) => {
      const parts = texts.slice(from, to);
      for (let i = 0; i < parts.length; i++) if (parts[i] === null) parts[i] = NULL_TEXT;
      return parts.join(SEPARATOR);
    },
    unnest: (c) => `unnest(string_split(${c}, chr(31)))`,
    cast: (c) => cast(`nullif(${c}, chr(30))`),
  };
}

/** Largest epoch millisecond a Date holds (±100,000,000 days, ECMA-262 §21.4.1.22); DuckDB holds more. */
const MAX_EPOCH_MS = 8.64e15;

/**
 * The epoch milliseconds of a timestamp given as a number or a Date, when whole and within what a
 * Date holds; else LAKE_INVALID_INPUT naming the column (an invalid Date included).
 */
function epochMsOf(column: string, value: number | Date): number {
  const ms = typeof value === 'number' ? value : value.getTime();
  if (!Number.isInteger(ms) || Math.abs(ms) > MAX_EPOCH_MS) {
    const shown = typeof value === 'number' ? String(value) : `an invalid Date`;
    throw lakeError('LAKE_INVALID_INPUT', `column ${column} is timestamp but got ${shown}: expected whole epoch milliseconds within ±${MAX_EPOCH_MS}`, { details: { column } });
  }
  return ms;
}

/** A timestamp as ISO text DuckDB parses: without the `+` JS puts before a year past 9999. */
function timestampText(column: string, value: number | Date): string {
  const text = new Date(epochMsOf(column, value)).toISOString();
  return text.charCodeAt(0) === 0x2b ? text.slice(1) : text;
}

const PLAIN_DECIMAL = /^[+-]?\d+(?:\.\d+)?$/;

/** A plain decimal literal of at most 15 significant digits and at most `scale` fraction digits. */
function exactInDouble(text: string, scale: number): boolean {
  if (!PLAIN_DECIMAL.test(text)) return false;
  const dot = text.indexOf('.');
  const fraction = dot < 0 ? 0 : text.length - dot - 1;
  let first = text.charCodeAt(0) === 0x2b || text.charCodeAt(0) === 0x2d ? 1 : 0;
  while (text.charCodeAt(first) === 0x30) first++; // leading zeros are not significant
  const integerDigits = Math.max(0, (dot < 0 ? text.length : dot) - first);
  return fraction <= scale && integerDigits + fraction <= 15;
}

function rowsToNdjson(fields: readonly DeltaField[], rows: readonly Record<string, unknown>[]): string {
  // read_json parses timestamps from text only: epoch-millisecond numbers (and Dates, for a
  // year past 9999) become ISO text DuckDB parses wherever the schema puts a timestamp
  // (columns, struct fields, array items, map values).
  const timed = fields.filter((f) => holdsTimestamp(f.type));
  const parts: string[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    let row = rows[i];
    if (timed.length > 0) {
      row = { ...row };
      for (const f of timed) row[f.name] = timestampsAsText(f.name, f.type, row[f.name]);
    }
    parts[i] = JSON.stringify(row, replacer);
  }
  return parts.join('\n') + '\n';
}

function holdsTimestamp(type: DeltaType): boolean {
  if (typeof type === 'string') return type === 'timestamp';
  if (type.type === 'array') return holdsTimestamp(type.elementType);
  if (type.type === 'map') return holdsTimestamp(type.valueType);
  return type.fields.some((f) => holdsTimestamp(f.type));
}

/** `value` of `type` with each number or Date at a timestamp position as ISO text. */
function timestampsAsText(column: string, type: DeltaType, value: unknown): unknown {
  if (type === 'timestamp') return typeof value === 'number' || value instanceof Date ? timestampText(column, value) : value;
  if (typeof type === 'string' || !holdsTimestamp(type)) return value;
  if (type.type === 'array') return Array.isArray(value) ? value.map((v: unknown) => timestampsAsText(column, type.elementType, v)) : value;
  // Anything but a plain object is left for read_json to refuse.
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (type.type === 'map') return Object.fromEntries(entries.map(([k, v]) => [k, timestampsAsText(column, type.valueType, v)]));
  return Object.fromEntries(entries.map(([k, v]) => {
    const field = type.fields.find((f) => f.name === k);
    return [k, field === undefined ? v : timestampsAsText(column, field.type, v)];
  }));
}

function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  return value;
}
