import { isSluiceError } from '@sluice/errors';
import { duckError, ident, sqlString, sqlStringList } from '../duck';
import { errorMessage, lakeError } from '../errors';
import type { LiveFile, Snapshot } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { duckType } from './schema';

// What DuckDB expands in a path: `*`, `?` and `[…]`. Braces it reads literally (checked with
// DuckDB 1.5); refusing `}` too made a partition value holding one (Hive escaping leaves `}` as
// it is, as Spark does) unreadable, unmergeable and uncompactable once written.
const GLOB_CHARS = /[*?[\]]/;

/** A local path DuckDB may read literally: glob characters would make it a pattern, so refuse them. */
export function duckReadablePath(p: string): string {
  if (GLOB_CHARS.test(p)) {
    throw lakeError('LAKE_INVALID_INPUT', `path ${JSON.stringify(p)} contains glob characters (*?[]), which DuckDB would expand; use another table location`);
  }
  return p;
}

/** What a relation needs of a snapshot: its schema, partition columns and each file's stats. */
export type RelationSource = Pick<Snapshot, 'schema' | 'partitionColumns' | 'stats'>;

/**
 * SQL for a relation over `files` of `source` with exactly the table's columns in schema order:
 * partition values become typed columns, and columns missing from old files (added by schema
 * evolution) read as NULL. `fileColumn` adds the storage key of each row's file.
 *
 * Files are read in one `read_parquet` scan, so DuckDB schedules their row groups together (a
 * union of one scan per partition was ~2× slower for a day's aggregate over 32 buckets). Files
 * whose stats show every column read share a plain scan; only files that may lack a column (written
 * before it was added, or without stats) go through a second scan with `union_by_name`, which
 * fills the gap with NULL but cost ~20 % more on the same files (docs/bench/query-api.md). A
 * partition value shared by every file of a scan is a constant; otherwise it is looked up by file
 * name, which DuckDB evaluates only when the query uses that column.
 */
export async function filesRelationSql(
  storage: Storage,
  source: RelationSource,
  files: readonly LiveFile[],
  options: {
    columns?: readonly string[];
    fileColumn?: string;
    /** Once aborted, no further file is fetched (a read past its deadline); fetches under way finish. */
    signal?: AbortSignal;
  } = {},
): Promise<string> {
  const { schema, partitionColumns } = source;
  const wanted = options.columns ?? schema.fields.map((f) => f.name);
  const fields = wanted.map((name) => {
    const f = schema.fields.find((x) => x.name === name);
    if (!f) throw lakeError('LAKE_SCHEMA_INVALID', `no column ${JSON.stringify(name)} in the table schema`);
    return f;
  });
  const partFields = fields.filter((f) => partitionColumns.includes(f.name));
  const dataNames = fields.filter((f) => !partitionColumns.includes(f.name)).map((f) => f.name);
  const fileCol = options.fileColumn;
  // An empty relation with every wanted column typed: UNION ALL BY NAME fills missing columns with NULL.
  const empty = `SELECT ${[...fields.map((f) => `NULL::${duckType(f.type)} AS ${ident(f.name)}`), ...(fileCol ? [`NULL::VARCHAR AS ${ident(fileCol)}`] : [])].join(', ')} WHERE false`;
  const complete: LiveFile[] = [];
  const partial: LiveFile[] = [];
  for (const f of files) (hasColumns(source, f, dataNames) ? complete : partial).push(f);
  const scan = async (group: readonly LiveFile[], unionByName: boolean): Promise<string> => {
    const paths = await localPaths(storage, group, options.signal);
    /** `value` of each file (typed `type`): a constant when all files agree, else by file name. */
    let needsFilename = false;
    const byFile = (value: (f: LiveFile) => string | null | undefined, type: string, name: string) => {
      const literal = (v: string | null | undefined) => (v === null || v === undefined ? `NULL::${type}` : `CAST(${sqlString(v)} AS ${type})`);
      const values = group.map(value);
      if (values.every((v) => (v ?? null) === (values[0] ?? null))) return `${literal(values[0])} AS ${name}`;
      needsFilename = true;
      return `CASE filename ${paths.map((p, i) => `WHEN ${sqlString(p)} THEN ${literal(values[i])}`).join(' ')} END AS ${name}`;
    };
    const consts = partFields.map((f) => byFile((file) => file.partitionValues[f.name], duckType(f.type), ident(f.name)));
    const fileExpr = fileCol ? [byFile((file) => file.key, 'VARCHAR', ident(fileCol))] : [];
    // With union_by_name, `*` rather than named columns: a column no file of the scan has would
    // fail to bind, and the outer UNION ALL BY NAME with the typed empty relation makes it NULL.
    // A plain scan names its columns: every file has them, whatever else a file holds.
    const columns = unionByName ? [needsFilename ? '* EXCLUDE (filename)' : '*'] : dataNames.map(ident);
    const from = `read_parquet(${sqlStringList(paths)}${unionByName ? ', union_by_name=true' : ''}${needsFilename ? ', filename=true' : ''}, hive_partitioning=false)`;
    return `SELECT ${[...columns, ...consts, ...fileExpr].join(', ')} FROM ${from}`;
  };
  const branches: string[] = [empty];
  if (complete.length > 0) branches.push(await scan(complete, false));
  if (partial.length > 0) branches.push(await scan(partial, true));
  const outCols = [...fields.map((f) => ident(f.name)), ...(fileCol ? [ident(fileCol)] : [])];
  return `SELECT ${outCols.join(', ')} FROM (${branches.map((b) => `(${b})`).join(' UNION ALL BY NAME ')})`;
}

/**
 * Whether `file` holds every column of `names`, by its stats: every writer computes a file's null
 * counts from the data it wrote (Sluice, Spark, delta-rs), so a column with a null count is in the
 * file. A file without them (no stats, or a writer indexing fewer columns) is not known to.
 */
function hasColumns(source: RelationSource, file: LiveFile, names: readonly string[]): boolean {
  if (names.length === 0) return true;
  const nullCount = source.stats(file)?.nullCount;
  return nullCount !== undefined && names.every((n) => Object.hasOwn(nullCount, n));
}

/** Files an S3 read downloads at once (cache misses); the SDK's sockets allow more. */
const DOWNLOADS_AT_ONCE = 8;

/**
 * DuckDB-readable local paths of `files`, in order. On S3 each cache miss is a download; they
 * run {@link DOWNLOADS_AT_ONCE} at a time rather than one after another (a cold read of 100 files
 * took 100 round trips end to end). Once `signal` is aborted none is started: the read's caller
 * has given up, and the downloads under way (at most that many) finish into the cache.
 */
async function localPaths(storage: Storage, files: readonly LiveFile[], signal: AbortSignal | undefined): Promise<string[]> {
  const paths = new Array<string>(files.length);
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      signal?.throwIfAborted();
      const i = next++;
      paths[i] = duckReadablePath(await localPathOf(storage, files[i].key));
    }
  };
  await Promise.all(Array.from({ length: Math.min(DOWNLOADS_AT_ONCE, files.length) }, worker));
  return paths;
}

/**
 * The local path of a data file the snapshot references. A file the store does not have is
 * LAKE_DATA_FILE_MISSING, as when DuckDB finds a local one gone: on S3 the download's "no such
 * object" was LAKE_NOT_FOUND, which readers took for a table without commits.
 */
async function localPathOf(storage: Storage, key: string): Promise<string> {
  try {
    return await storage.localPath(key);
  } catch (err) {
    if (!isSluiceError(err, 'LAKE_NOT_FOUND')) throw err;
    throw lakeError('LAKE_DATA_FILE_MISSING', `data file ${key} is missing from ${storage.uri}`, { cause: err, details: { file: key } });
  }
}

/**
 * Maps DuckDB's "file not found" errors to LAKE_DATA_FILE_MISSING naming the file; anything else
 * as {@link duckError} does (LAKE_OUT_OF_MEMORY, else `code`).
 */
export function translateReadError(what: string, cause: unknown, code?: Parameters<typeof duckError>[2]): Error {
  const message = errorMessage(cause);
  const m = /No files found that match the pattern "([^"]+)"|Cannot open file "([^"]+)": No such file or directory|No such file or directory.*?"([^"]+)"/.exec(message);
  if (m) {
    const file = m[1] ?? m[2] ?? m[3];
    return lakeError('LAKE_DATA_FILE_MISSING', `${what}: data file ${file} is missing`, { cause, details: { file } });
  }
  // Any other reason a file would not open (too many open files, no permission, an I/O error)
  // is the machine's, not a sign the file is gone: retryable, never "vacuumed".
  const unopened = /Cannot open file "([^"]+)"/.exec(message);
  if (unopened) {
    return lakeError('LAKE_STORAGE_UNAVAILABLE', `${what}: ${message.split('\n')[0]}`, { cause, details: { file: unopened[1] } });
  }
  return duckError(what, cause, code);
}
