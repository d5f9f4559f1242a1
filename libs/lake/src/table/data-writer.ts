import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { LosslessNumber } from 'lossless-json';
import { ident, sqlString } from '../duck';
import { lakeError } from '../errors';
import type { AddAction } from '../log/actions';
import { stringifyJson } from '../log/json';
import type { Storage } from '../storage/storage';
import { encodeAddPath, partitionDirectory, partitionValueSql } from './partition';
import { parquetCopyOptions, type ParquetLayout } from './properties';
import { orderTermsSql, type SortKey } from './row-order';
import { duckType, hasMinMaxStats, isStruct, type DeltaField, type TableSchema } from './schema';

/** What {@link writeDataFiles} needs: a DuckDB relation and where the files go. */
export interface WriteFilesInput {
  conn: DuckDBConnection;
  storage: Storage;
  schema: TableSchema;
  partitionColumns: readonly string[];
  /** A SELECT yielding every schema column (typed as the schema says). */
  sourceSql: string;
  /**
   * The source is a materialized table (cheap to scan twice): read it through a view instead of
   * copying it into a work table first.
   */
  sourceIsTable?: boolean;
  /** Rows are split into files by these columns' order (clustering) when maxRowsPerFile is set. */
  sortBy?: readonly string[];
  /** Split each partition into files of at most this many rows. */
  maxRowsPerFile?: number;
  /** The order rows are written in within files when the layout sets `rowGroupRows`; default `sortBy`. */
  rowOrder?: readonly SortKey[];
  /**
   * Codec and rows per row group (the table's `sluice.parquet.*` properties). With `rowGroupRows`
   * rows are also written in `rowOrder`, so each group covers a narrow range of it — roughly:
   * the partitioned COPY writes with DuckDB's threads in parallel, interleaving sorted runs
   * (DuckDB 1.5 has no per-partition ORDER_BY for COPY); compaction's single-file COPY is exact.
   */
  layout: ParquetLayout;
  dataChange: boolean;
  /** Local directory for DuckDB's output before it moves into storage. */
  scratchDir: string;
}

/** Files written (not yet committed) and totals. */
export interface WrittenFiles {
  adds: AddAction[];
  rows: number;
  bytes: number;
}

/**
 * Writes a relation as Parquet data files with unique `part-<uuid>` names, one group of files per
 * partition (partition columns excluded from the files), and exact per-file stats computed in SQL
 * (DELTA.md §2/§3). Files are moved into storage but not committed: a crash leaves only
 * unreferenced files, which vacuum removes.
 */
export async function writeDataFiles(input: WriteFilesInput): Promise<WrittenFiles> {
  const { conn, schema, partitionColumns } = input;
  const id = randomUUID().replace(/-/g, '');
  const base = `__lake_w_${id}`;
  let work = base;
  const dataFields = schema.fields.filter((f) => !partitionColumns.includes(f.name));
  const partFields = partitionColumns.map((c) => {
    const f = schema.fields.find((x) => x.name === c);
    if (!f) throw lakeError('LAKE_SCHEMA_INVALID', `partition column ${JSON.stringify(c)} is not in the schema`);
    return f;
  });
  const pAliases = partFields.map((_, i) => `__p${i}`);
  const pExprs = partFields.map((f, i) => `${partitionValueSql(ident(f.name), f.type)} AS ${pAliases[i]}`);
  const dataCols = dataFields.map((f) => ident(f.name));
  const groupCols = [...pAliases, '__chunk'];

  await conn.run(`CREATE TEMP ${input.sourceIsTable ? 'VIEW' : 'TABLE'} ${base} AS SELECT ${[...schema.fields.map((f) => ident(f.name)), ...pExprs, '0::BIGINT AS __chunk'].join(', ')} FROM (${input.sourceSql})`);
  const groupsTable = `__lake_g_${id}`;
  try {
    const max = input.maxRowsPerFile ? Math.max(1, Math.floor(input.maxRowsPerFile)) : undefined;
    if (max !== undefined) {
      // Chunking costs a pass (or a sort); pay for it only when some partition exceeds one file.
      const perPartition = `SELECT count(*) AS n FROM ${work}${pAliases.length ? ` GROUP BY ${pAliases.join(', ')}` : ''}`;
      const largest = (await conn.runAndReadAll(`SELECT max(n) FROM (${perPartition})`)).getRows()[0][0];
      if (Number(largest ?? 0) > max) {
        const sortField = input.sortBy?.length === 1 ? schema.fields.find((f) => f.name === input.sortBy![0]) : undefined;
        if (sortField && ['long', 'integer', 'short', 'byte'].includes(sortField.type as string)) {
          // Integer clustering column (a key hash): split each partition into equal-width value
          // ranges, which keeps files narrow for stats pruning without sorting the rows.
          const c = ident(sortField.name);
          const on = pAliases.length ? pAliases.map((p) => `w.${p} IS NOT DISTINCT FROM ps.${p}`).join(' AND ') : 'true';
          work = `${base}_c`;
          await conn.run(
            `CREATE TEMP TABLE ${work} AS
             WITH ps AS (SELECT ${[...pAliases, 'count(*) AS n', `min(${c})::DOUBLE AS lo`, `max(${c})::DOUBLE AS hi`].join(', ')} FROM ${base}${pAliases.length ? ` GROUP BY ${pAliases.join(', ')}` : ''})
             SELECT w.* REPLACE (CASE WHEN ps.n <= ${max} THEN 0
               ELSE COALESCE(least(CAST(floor((w.${c}::DOUBLE - ps.lo) / (ps.hi - ps.lo + 1) * ceil(ps.n / ${max})) AS BIGINT), CAST(ceil(ps.n / ${max}) AS BIGINT) - 1), 0) END AS __chunk)
             FROM ${base} w JOIN ps ON ${on}`,
          );
        } else {
          const sort = input.sortBy?.length ? `ORDER BY ${input.sortBy.map(ident).join(', ')}` : '';
          work = `${base}_c`;
          await conn.run(
            `CREATE TEMP TABLE ${work} AS SELECT * REPLACE ((row_number() OVER (${pAliases.length ? `PARTITION BY ${pAliases.join(', ')} ` : ''}${sort}) - 1) // ${max} AS __chunk) FROM ${base}`,
          );
        }
      }
    }
    const groups = await groupStats(conn, work, dataFields, pAliases, partitionColumns);
    if (groups.length === 0) return { adds: [], rows: 0, bytes: 0 };
    await conn.run(`CREATE TEMP TABLE ${groupsTable} (${[...pAliases.map((p) => `${p} VARCHAR`), '__chunk BIGINT', '__g INTEGER'].join(', ')})`);
    await conn.run(
      `INSERT INTO ${groupsTable} VALUES ${groups.map((g, i) => `(${[...partitionColumns.map((c) => (g.partitionValues[c] === null ? 'NULL' : sqlString(g.partitionValues[c] as string))), String(g.chunk), String(i)].join(', ')})`).join(', ')}`,
    );
    const joinOn = groupCols.map((c) => `w.${c} IS NOT DISTINCT FROM g.${c}`).join(' AND ');
    const outDir = path.join(input.scratchDir, id);
    await fs.mkdir(outDir, { recursive: true });
    try {
      const rowOrder = input.rowOrder ?? input.sortBy;
      const ordered = input.layout.rowGroupRows !== undefined && rowOrder?.length ? ` ORDER BY ${orderTermsSql(rowOrder, schema, 'w')}` : '';
      const copied = await conn.runAndReadAll(
        `COPY (SELECT ${[...dataCols.map((c) => `w.${c}`), 'g.__g'].join(', ')} FROM ${work} w JOIN ${groupsTable} g ON ${joinOn}${ordered}) TO ${sqlString(outDir)}
         (FORMAT parquet, PARTITION_BY (__g), FILENAME_PATTERN 'part-{uuid}', RETURN_FILES true${parquetCopyOptions(input.layout)})`,
      );
      const files = (copied.getRowObjectsJS()[0]?.Files as string[] | undefined) ?? [];
      const byGroup = new Map<number, string[]>();
      for (const f of files) {
        const m = /__g=(\d+)[/\\]([^/\\]+)$/.exec(f);
        if (!m) throw lakeError('LAKE_QUERY_FAILED', `unexpected DuckDB output file ${f}`);
        const g = Number(m[1]);
        byGroup.set(g, [...(byGroup.get(g) ?? []), f]);
      }
      // DuckDB may split one partition into several files; then each file needs its own stats.
      const written = [...byGroup].flatMap(([g, groupFiles]) => {
        const group = groups[g];
        if (!group) throw lakeError('LAKE_QUERY_FAILED', `DuckDB wrote group ${g} that has no rows`);
        return groupFiles.map((file) => ({ file, group, stats: groupFiles.length === 1 ? group.stats : undefined }));
      });
      // One file per partition touched: moved one after another, a step over 32 buckets spent more
      // time in the moves' fsyncs and renames (or S3 PUTs) than in DuckDB's COPY.
      const moved = await mapAtMost(written, MOVES_AT_ONCE, async ({ file, group, stats: groupStatsOf }) => {
        const stats = groupStatsOf ?? (await fileStats(conn, file, dataFields));
        const st = await fs.stat(file);
        const dir = partitionDirectory(partitionColumns, group.partitionValues);
        const key = `${dir ? dir + '/' : ''}${path.basename(file)}`;
        await moveIntoStorage(input.storage, key, file);
        const add: AddAction = {
          path: encodeAddPath(key),
          partitionValues: { ...group.partitionValues },
          size: st.size,
          modificationTime: Date.now(),
          dataChange: input.dataChange,
          stats: stringifyJson(stats),
        };
        return { add, rows: stats.numRecords };
      });
      const adds = moved.map((m) => m.add);
      return { adds, rows: moved.reduce((n, m) => n + m.rows, 0), bytes: adds.reduce((n, a) => n + a.size, 0) };
    } finally {
      await fs.rm(outDir, { recursive: true, force: true });
    }
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${base}_c`);
    await conn.run(`DROP ${input.sourceIsTable ? 'VIEW' : 'TABLE'} IF EXISTS ${base}`);
    await conn.run(`DROP TABLE IF EXISTS ${groupsTable}`);
  }
}

interface StatsJson {
  numRecords: number;
  minValues: Record<string, unknown>;
  maxValues: Record<string, unknown>;
  nullCount: Record<string, number>;
}

async function groupStats(conn: DuckDBConnection, table: string, fields: DeltaField[], pAliases: string[], partitionColumns: readonly string[]) {
  const select = [...pAliases, '__chunk', 'count(*)::BIGINT AS __n', ...statExprs(fields)];
  const result = await conn.runAndReadAll(`SELECT ${select.join(', ')} FROM ${table} GROUP BY ${[...pAliases, '__chunk'].join(', ')}`);
  return result.getRows().map((row) => {
    const partitionValues: Record<string, string | null> = {};
    partitionColumns.forEach((c, i) => {
      const v = row[i];
      partitionValues[c] = v === null || v === undefined ? null : String(v);
    });
    const base = pAliases.length;
    return { partitionValues, chunk: Number(row[base]), stats: toStats(row.slice(base + 2), Number(row[base + 1]), fields) };
  });
}

/** Per column: null count, then min and max rendered as strings (null when not allowed/unsafe). */
function statExprs(fields: DeltaField[]): string[] {
  const out: string[] = [];
  fields.forEach((f, i) => {
    const c = ident(f.name);
    out.push(`(count(*) - count(${c}))::BIGINT AS __nc${i}`);
    const [mn, mx] = hasMinMaxStats(f.type) ? minMaxSql(c, f) : ['NULL', 'NULL'];
    out.push(`${mn} AS __mn${i}`, `${mx} AS __mx${i}`);
  });
  return out;
}

function minMaxSql(c: string, f: DeltaField): [string, string] {
  switch (f.type) {
    case 'string':
      // Strings over 32 characters get no stats rather than a truncated (possibly too tight) max.
      return [`CASE WHEN length(min(${c})) <= 32 THEN min(${c}) END`, `CASE WHEN length(max(${c})) <= 32 THEN max(${c}) END`];
    case 'date':
      return [`strftime(min(${c}), '%Y-%m-%d')`, `strftime(max(${c}), '%Y-%m-%d')`];
    case 'timestamp':
      // Millisecond precision: floor the minimum, ceil the maximum (DELTA.md §2).
      return [
        `strftime(date_trunc('millisecond', min(${c})), '%Y-%m-%dT%H:%M:%S.%gZ')`,
        `strftime(date_trunc('millisecond', max(${c}) + INTERVAL 999 MICROSECOND), '%Y-%m-%dT%H:%M:%S.%gZ')`,
      ];
    case 'float':
    case 'double':
      return [`CASE WHEN isfinite(min(${c})) THEN CAST(min(${c}) AS VARCHAR) END`, `CASE WHEN isfinite(max(${c})) THEN CAST(max(${c}) AS VARCHAR) END`];
    default:
      return [`CAST(min(${c}) AS VARCHAR)`, `CAST(max(${c}) AS VARCHAR)`];
  }
}

const NUMERIC = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

function toStats(values: unknown[], numRecords: number, fields: DeltaField[]): StatsJson {
  const stats: StatsJson = { numRecords, minValues: {}, maxValues: {}, nullCount: {} };
  fields.forEach((f, i) => {
    // A struct's nullCount is a nested object of its leaves' counts in Delta; a number there made
    // delta-rs discard every stat of the file (row count, ranges). None is written for a struct.
    if (!isStruct(f)) stats.nullCount[f.name] = Number(values[i * 3]);
    const mn = values[i * 3 + 1];
    const mx = values[i * 3 + 2];
    if (mn === null || mx === null || mn === undefined || mx === undefined) return;
    const numeric = f.type !== 'string' && f.type !== 'date' && f.type !== 'timestamp';
    if (numeric) {
      const a = String(mn);
      const b = String(mx);
      if (!NUMERIC.test(a) || !NUMERIC.test(b)) return;
      stats.minValues[f.name] = new LosslessNumber(a);
      stats.maxValues[f.name] = new LosslessNumber(b);
    } else {
      stats.minValues[f.name] = String(mn);
      stats.maxValues[f.name] = String(mx);
    }
  });
  return stats;
}

async function fileStats(conn: DuckDBConnection, file: string, fields: DeltaField[]): Promise<StatsJson> {
  const result = await conn.runAndReadAll(`SELECT count(*)::BIGINT, ${statExprs(fields).join(', ')} FROM read_parquet(${sqlString(file)})`);
  const row = result.getRows()[0];
  return toStats(row.slice(1), Number(row[0]), fields);
}

/** Files moved into storage at once: on S3 each is a PUT, on local disk two fsyncs and a rename. */
const MOVES_AT_ONCE = 8;

/**
 * `fn` over `items`, at most `limit` (at least 1) at a time, results in `items`' order. After a failure none is
 * started, and the first error is thrown once the ones under way have settled (the caller then
 * removes the files they were moving).
 */
export async function mapAtMost<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, Math.floor(limit)), items.length) }, worker));
  if (failure) throw failure.err;
  return results;
}

async function moveIntoStorage(storage: Storage, key: string, file: string): Promise<void> {
  if (storage.putFile) return storage.putFile(key, file);
  await storage.put(key, await fs.readFile(file));
}

/** DuckDB column types for a schema, as a `read_json(columns=...)` struct literal. */
export function jsonColumnsLiteral(fields: readonly DeltaField[]): string {
  return `{${fields.map((f) => `${sqlString(f.name)}: ${sqlString(jsonReadType(f))}`).join(', ')}}`;
}

function jsonReadType(f: DeltaField): string {
  // Binary arrives base64-encoded; decoded after reading.
  return f.type === 'binary' ? 'VARCHAR' : duckType(f.type);
}
