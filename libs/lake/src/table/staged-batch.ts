import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { ident, sqlString, withConnection } from '../duck';
import { lakeError } from '../errors';
import { ingestSource, type WriteSource } from './ingest';
import { partitionValueSql } from './partition';
import type { DeltaField } from './schema';

/**
 * The partition key a table's files and a staged batch's rows are grouped by: the JSON list of
 * the partition columns' values as the log holds them (strings, null for none).
 */
export function partitionKeyOf(values: readonly (string | null)[]): string {
  return JSON.stringify(values);
}

/**
 * A write's rows staged once as a local Parquet file with a table's columns, so parts of it can
 * go to different places (an amortised merge: the partitions it folds straight into the MERGE,
 * the others to the tail). The caller removes it with {@link StagedBatch.remove}.
 */
export class StagedBatch {
  private constructor(
    private readonly file: string,
    private readonly partitionExprs: readonly string[],
    /** Rows per partition key ({@link partitionKeyOf}). */
    readonly rowsByPartition: ReadonlyMap<string, number>,
  ) {}

  /** Stages `source` with exactly `fields` (typed as they say) under `scratchDir`. */
  static async stage(source: WriteSource, fields: readonly DeltaField[], partitionColumns: readonly string[], scratchDir: string): Promise<StagedBatch> {
    const partitionExprs = partitionColumns.map((c) => {
      const f = fields.find((x) => x.name === c);
      if (!f) throw lakeError('LAKE_SCHEMA_INVALID', `partition column ${JSON.stringify(c)} is not among the staged columns`);
      return partitionValueSql(ident(c), f.type);
    });
    await fs.mkdir(scratchDir, { recursive: true });
    const file = path.join(scratchDir, `__lake_stage_${randomUUID().replace(/-/g, '')}.parquet`);
    try {
      const rowsByPartition = await withConnection(async (conn) => {
        const input = await ingestSource(conn, fields, source, scratchDir);
        try {
          await conn.run(`COPY ${input} TO ${sqlString(file)} (FORMAT parquet)`);
          const select = partitionExprs.length ? `${partitionExprs.map((e, i) => `${e} AS __p${i}`).join(', ')}, count(*)` : 'count(*)';
          const rows = (await conn.runAndReadAll(`SELECT ${select} FROM ${input}${partitionExprs.length ? ' GROUP BY ALL' : ''}`)).getRows();
          const counts = new Map<string, number>();
          for (const r of rows) {
            const n = Number(r[partitionExprs.length]);
            if (n > 0) counts.set(partitionKeyOf(r.slice(0, partitionExprs.length).map((v) => (v === null || v === undefined ? null : String(v)))), n);
          }
          return counts;
        } finally {
          await conn.run(`DROP TABLE IF EXISTS ${input}`);
        }
      });
      return new StagedBatch(file, partitionExprs, rowsByPartition);
    } catch (err) {
      await fs.rm(file, { force: true });
      throw err;
    }
  }

  /** Rows staged in all. */
  get rows(): number {
    let n = 0;
    for (const c of this.rowsByPartition.values()) n += c;
    return n;
  }

  /** Rows staged in the partitions `keys` names (`inside`), or in the others. */
  rowsIn(keys: ReadonlySet<string>, inside: boolean): number {
    let n = 0;
    for (const [key, c] of this.rowsByPartition) if (keys.has(key) === inside) n += c;
    return n;
  }

  /** A SELECT of the staged rows in the partitions `keys` names (`inside`), or in the others. */
  selectSql(keys: ReadonlySet<string>, inside: boolean): string {
    const matches = [...keys].map((key) => {
      const values = JSON.parse(key) as (string | null)[];
      return `(${this.partitionExprs.map((e, i) => `${e} IS NOT DISTINCT FROM ${values[i] === null ? 'NULL' : sqlString(values[i] as string)}`).join(' AND ') || 'true'})`;
    });
    const inKeys = matches.length ? matches.join(' OR ') : 'false';
    return `SELECT * FROM read_parquet(${sqlString(this.file)}) WHERE ${inside ? inKeys : `NOT (${inKeys})`}`;
  }

  async remove(): Promise<void> {
    await fs.rm(this.file, { force: true });
  }
}
