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
 * values become typed columns, and columns missing from old files (added by schema evolution)
 * read as NULL. `fileColumn` adds the storage key of each row's file.
 *
 * One `read_parquet` over every file: DuckDB schedules the files' row groups as one scan (a
 * union of one scan per partition was ~2× slower for a day's aggregate over 32 buckets). A
 * partition value shared by every file is a constant; otherwise it is looked up by file name,
 * which DuckDB evaluates only when the query uses that column.
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
  if (files.length > 0) {
    const paths: string[] = [];
    for (const f of files) paths.push(duckReadablePath(await storage.localPath(f.key)));
    /** `value` of each file (typed `type`): a constant when all files agree, else by file name. */
    const byFile = (value: (f: LiveFile) => string | null | undefined, type: string, name: string) => {
      const literal = (v: string | null | undefined) => (v === null || v === undefined ? `NULL::${type}` : `CAST(${sqlString(v)} AS ${type})`);
      const values = files.map(value);
      if (values.every((v) => (v ?? null) === (values[0] ?? null))) return `${literal(values[0])} AS ${name}`;
      return `CASE filename ${paths.map((p, i) => `WHEN ${sqlString(p)} THEN ${literal(values[i])}`).join(' ')} END AS ${name}`;
    };
    const consts = partFields.map((f) => byFile((file) => file.partitionValues[f.name], duckType(f.type), ident(f.name)));
    const fileExpr = fileCol ? [byFile((file) => file.key, 'VARCHAR', ident(fileCol))] : [];
    // `*` rather than named columns: a file written before a column was added lacks it, and the
    // outer UNION ALL BY NAME with the typed empty relation turns it into NULL.
    branches.push(
      `SELECT * EXCLUDE (filename)${[...consts, ...fileExpr].map((c) => `, ${c}`).join('')} FROM read_parquet(${sqlStringList(paths)}, union_by_name=true, filename=true, hive_partitioning=false)`,
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
