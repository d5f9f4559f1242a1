import { ident, sqlString, sqlStringList } from '../duck';
import { lakeError } from '../errors';
import type { LiveFile } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { duckType, type TableSchema } from './schema';

const GLOB_CHARS = /[*?[\]{}]/;

/** A local path DuckDB may read literally: glob characters would make it a pattern, so refuse them. */
export function duckReadablePath(p: string): string {
  if (GLOB_CHARS.test(p)) {
    throw lakeError('LAKE_INVALID_INPUT', `path ${JSON.stringify(p)} contains glob characters (*?[]{}), which DuckDB would expand; use another table location`);
  }
  return p;
}

/**
 * SQL for a relation over `files` with exactly the table's columns in schema order: partition
 * values become typed constant columns, and columns missing from old files (added by schema
 * evolution) read as NULL. `fileColumn` adds the storage key of each row's file.
 */
export async function filesRelationSql(
  storage: Storage,
  schema: TableSchema,
  partitionColumns: readonly string[],
  files: readonly LiveFile[],
  options: { columns?: readonly string[]; fileColumn?: string } = {},
): Promise<string> {
  const wanted = options.columns ?? schema.fields.map((f) => f.name);
  const fields = wanted.map((name) => {
    const f = schema.fields.find((x) => x.name === name);
    if (!f) throw lakeError('LAKE_SCHEMA_INVALID', `no column ${JSON.stringify(name)} in the table schema`);
    return f;
  });
  const partFields = fields.filter((f) => partitionColumns.includes(f.name));
  const fileCol = options.fileColumn;
  // An empty relation with every wanted column typed: UNION ALL BY NAME fills missing columns with NULL.
  const empty = `SELECT ${[...fields.map((f) => `NULL::${duckType(f.type)} AS ${ident(f.name)}`), ...(fileCol ? [`NULL::VARCHAR AS ${ident(fileCol)}`] : [])].join(', ')} WHERE false`;
  const branches: string[] = [empty];

  const groups = new Map<string, LiveFile[]>();
  for (const f of files) {
    const k = JSON.stringify(partitionColumns.map((c) => f.partitionValues[c] ?? null));
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(f);
  }
  for (const group of groups.values()) {
    const paths: string[] = [];
    const byPath = new Map<string, string>();
    for (const f of group) {
      const p = duckReadablePath(await storage.localPath(f.key));
      paths.push(p);
      byPath.set(p, f.key);
    }
    const consts = partFields.map((f) => {
      const v = group[0].partitionValues[f.name];
      return v === null || v === undefined ? `NULL::${duckType(f.type)} AS ${ident(f.name)}` : `CAST(${sqlString(v)} AS ${duckType(f.type)}) AS ${ident(f.name)}`;
    });
    // `*` rather than named columns: a file written before a column was added lacks it, and the
    // outer UNION ALL BY NAME with the typed empty relation turns it into NULL.
    const fileExpr = fileCol ? [`CASE filename ${[...byPath].map(([p, k]) => `WHEN ${sqlString(p)} THEN ${sqlString(k)}`).join(' ')} END AS ${ident(fileCol)}`] : [];
    branches.push(
      `SELECT * EXCLUDE (filename)${consts.length ? ', ' + consts.join(', ') : ''}${fileExpr.length ? ', ' + fileExpr.join(', ') : ''} FROM read_parquet(${sqlStringList(paths)}, union_by_name=true, filename=true, hive_partitioning=false)`,
    );
  }
  const outCols = [...fields.map((f) => ident(f.name)), ...(fileCol ? [ident(fileCol)] : [])];
  return `SELECT ${outCols.join(', ')} FROM (${branches.map((b) => `(${b})`).join(' UNION ALL BY NAME ')})`;
}

/**
 * Maps DuckDB's "file not found" errors to LAKE_DATA_FILE_MISSING naming the file; anything else
 * becomes LAKE_QUERY_FAILED.
 */
export function translateReadError(what: string, cause: unknown): Error {
  const message = cause instanceof Error ? cause.message : String(cause);
  const m = /No files found that match the pattern "([^"]+)"|Cannot open file "([^"]+)"|No such file or directory.*?"([^"]+)"/.exec(message);
  if (m) {
    const file = m[1] ?? m[2] ?? m[3];
    return lakeError('LAKE_DATA_FILE_MISSING', `${what}: data file ${file} is missing`, { cause, details: { file } });
  }
  return lakeError('LAKE_QUERY_FAILED', `${what}: ${message}`, { cause });
}
