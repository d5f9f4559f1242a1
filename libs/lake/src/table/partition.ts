import { lakeError } from '../errors';
import type { DeltaType } from './schema';

/**
 * Partition paths per DELTA.md §4: the directory name is Hive-escaped (`%XX` for controls,
 * `"#%'*\/:=?\[]^{` and DEL), and `add.path` URI-encodes that directory once more, so
 * `US/East` is `region=US%2FEast` on storage and `region=US%252FEast` in the log.
 */
const HIVE_ESCAPE = new Set(['"', '#', '%', "'", '*', '/', ':', '=', '?', '\\', '[', ']', '^', '{', '\x7f']);
/** Characters a Java `URI` would quote in a path, beyond those Hive escaping already removed. */
const URI_ESCAPE = new Set(['%', ' ', '<', '>', '`', '|', '{', '}', '"', '^', '[', ']', '\\', '#']);

/** Hive-escapes one path segment (a column name or partition value). */
export function hiveEscape(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    out += code < 0x20 || HIVE_ESCAPE.has(ch) ? `%${code.toString(16).toUpperCase().padStart(2, '0')}` : ch;
  }
  return out;
}

/** The storage directory of a partition, e.g. `date=2026-01-01/bucket=3` (no trailing slash). */
export function partitionDirectory(columns: readonly string[], values: Readonly<Record<string, string | null>>): string {
  return columns
    .map((c) => {
      const v = values[c];
      return `${hiveEscape(c)}=${v === null || v === undefined ? '__HIVE_DEFAULT_PARTITION__' : hiveEscape(v)}`;
    })
    .join('/');
}

/** `add.path` for a storage key: URI-encodes characters Java's URI would quote (incl. `%`). */
export function encodeAddPath(key: string): string {
  let out = '';
  for (const ch of key) out += URI_ESCAPE.has(ch) ? `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : ch;
  return out;
}

/**
 * The storage key of an `add.path` (URI-decoded once, as Delta readers do). Absolute URIs
 * (other tables' files) are refused: this library only reads files under the table root.
 */
export function decodeAddPath(path: string): string {
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(path)) {
    throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `absolute add.path ${JSON.stringify(path)} is not supported`);
  }
  try {
    return decodeURIComponent(path);
  } catch (cause) {
    throw lakeError('LAKE_LOG_CORRUPT', `add.path ${JSON.stringify(path)} is not valid URI encoding`, { cause });
  }
}

/**
 * SQL (DuckDB) expression that renders column `col` of type `type` as its Delta partition value
 * string: null or '' become NULL, dates `YYYY-MM-DD`, timestamps `...T..:..:...ffffffZ` (UTC),
 * booleans `true`/`false`, numbers as plain text (decimals with full scale).
 */
export function partitionValueSql(col: string, type: DeltaType): string {
  switch (type) {
    case 'string':
      return `NULLIF(${col}, '')`;
    case 'date':
      return `strftime(${col}, '%Y-%m-%d')`;
    case 'timestamp':
      return `strftime(${col}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case 'binary':
      throw lakeError('LAKE_SCHEMA_INVALID', 'binary columns cannot be partition columns');
    default:
      if (typeof type !== 'string') throw lakeError('LAKE_SCHEMA_INVALID', 'nested columns cannot be partition columns');
      return `CAST(${col} AS VARCHAR)`;
  }
}
