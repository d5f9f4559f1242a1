import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { LosslessNumber } from 'lossless-json';
import { sqlString } from '../duck';
import type { AddAction } from '../log/actions';
import { stringifyJson } from '../log/json';
import type { FileStats, LiveFile, Snapshot } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { encodeAddPath } from './partition';
import { parquetCopyOptions, type ParquetLayout } from './properties';
import { filesRelationSql } from './relation';
import { orderTermsSql, type SortKey } from './row-order';
import { isStruct, type DeltaField } from './schema';

/**
 * Rewrites one bin (files of a single partition) as one Parquet file in a single streaming COPY.
 * The output's min/max stats are merged from the inputs' stats (the same rows), so no second pass
 * over the data is needed; a column whose inputs lack usable stats simply gets none. Null counts
 * come from the output's own Parquet footer: exact even where an input predates a column, so the
 * output is known to hold every column and is read without `union_by_name` (relation.ts).
 */
export async function compactBin(
  conn: DuckDBConnection,
  storage: Storage,
  snap: Snapshot,
  bin: readonly LiveFile[],
  options: { scratchDir: string; sortBy?: readonly SortKey[]; layout: ParquetLayout },
): Promise<{ add: AddAction; bytes: number }> {
  const dataFields = snap.schema.fields.filter((f) => !snap.partitionColumns.includes(f.name));
  const rel = await filesRelationSql(storage, snap, bin, { columns: dataFields.map((f) => f.name) });
  const order = options.sortBy?.length ? ` ORDER BY ${orderTermsSql(options.sortBy, snap.schema)}` : '';
  await fs.mkdir(options.scratchDir, { recursive: true });
  const name = `part-${randomUUID()}${options.layout.codec === 'uncompressed' ? '' : `.${options.layout.codec}`}.parquet`;
  const local = path.join(options.scratchDir, name);
  const result = await conn.runAndReadAll(`COPY (${rel}${order}) TO ${sqlString(local)} (FORMAT parquet${parquetCopyOptions(options.layout)})`);
  const rows = Number(result.getRows()[0][0]);
  try {
    // Before the file moves into storage (a local put renames it).
    const merged = mergeStats(bin.map((f) => snap.stats(f)), dataFields, rows);
    const stats = { ...merged, nullCount: { ...merged.nullCount, ...(await footerNullCounts(conn, local, dataFields)) } };
    const size = (await fs.stat(local)).size;
    const dir = bin[0].key.includes('/') ? bin[0].key.slice(0, bin[0].key.lastIndexOf('/') + 1) : '';
    const key = dir + name;
    if (storage.putFile) await storage.putFile(key, local);
    else await storage.put(key, await fs.readFile(local));
    const add: AddAction = {
      path: encodeAddPath(key),
      partitionValues: { ...bin[0].partitionValues },
      size,
      modificationTime: Date.now(),
      dataChange: false,
      stats: stringifyJson(stats),
    };
    return { add, bytes: size };
  } finally {
    await fs.rm(local, { force: true });
  }
}

/** Null count per column of `fields` from a Parquet file's footer, where every row group records one. */
async function footerNullCounts(conn: DuckDBConnection, file: string, fields: readonly DeltaField[]): Promise<Record<string, number>> {
  const result = await conn.runAndReadAll(
    `SELECT path_in_schema, sum(stats_null_count)::BIGINT, count(stats_null_count) = count(*) FROM parquet_metadata(${sqlString(file)}) GROUP BY path_in_schema`,
  );
  const out: Record<string, number> = {};
  for (const [column, nulls, complete] of result.getRows()) {
    if (complete === true && typeof column === 'string' && fields.some((f) => f.name === column)) out[column] = Number(nulls);
  }
  return out;
}

const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const DATE = /^\d{4}-\d\d-\d\d$/;

/** Exact stats of the union of files from theirs; omits what cannot be derived safely. */
export function mergeStats(inputs: readonly (FileStats | undefined)[], fields: readonly DeltaField[], numRecords: number) {
  const out = { numRecords, minValues: {} as Record<string, unknown>, maxValues: {} as Record<string, unknown>, nullCount: {} as Record<string, number> };
  for (const f of fields) {
    let nulls = 0;
    let nullsKnown = true;
    let lo: unknown;
    let hi: unknown;
    let rangeKnown = true;
    for (const s of inputs) {
      const n = s?.numRecords;
      const nc = s?.nullCount?.[f.name];
      if (typeof nc === 'number' || typeof nc === 'bigint') nulls += Number(nc);
      else nullsKnown = false;
      if (typeof n === 'number' && nc !== undefined && Number(nc) === n) continue; // all null: no range
      const a = s?.minValues?.[f.name];
      const b = s?.maxValues?.[f.name];
      if (!comparable(f, a) || !comparable(f, b)) {
        rangeKnown = false;
        continue;
      }
      if (lo === undefined || less(a, lo)) lo = a;
      if (hi === undefined || less(hi, b)) hi = b;
    }
    if (nullsKnown && !isStruct(f)) out.nullCount[f.name] = nulls; // a struct's is per leaf (data-writer.ts)
    if (rangeKnown && lo !== undefined && hi !== undefined) {
      out.minValues[f.name] = toJsonValue(lo);
      out.maxValues[f.name] = toJsonValue(hi);
    }
  }
  return out;
}

function comparable(f: DeltaField, v: unknown): boolean {
  switch (f.type) {
    case 'long':
    case 'integer':
    case 'short':
    case 'byte':
      return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v));
    case 'double':
    case 'float':
      return typeof v === 'number' && Number.isFinite(v);
    case 'timestamp':
      return typeof v === 'string' && TS.test(v);
    case 'date':
      return typeof v === 'string' && DATE.test(v);
    case 'string':
      // ASCII only: JS and Parquet (byte-wise) orders agree there.
      return typeof v === 'string' && /^[\x20-\x7e]*$/.test(v);
    default:
      return false; // decimals: the parsed double may not be exact
  }
}

function less(a: unknown, b: unknown): boolean {
  if (typeof a === 'string' && typeof b === 'string') return a < b;
  if (typeof a === 'bigint' || typeof b === 'bigint') return BigInt(a as number) < BigInt(b as number);
  return (a as number) < (b as number);
}

function toJsonValue(v: unknown): unknown {
  return typeof v === 'bigint' ? new LosslessNumber(v.toString()) : v;
}
