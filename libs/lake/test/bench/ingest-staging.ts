// JS-row ingestion (rows → typed DuckDB temp table, the part of append that dominates): the
// current path against the previous one (text values each their own native call), alternating in the same run.
// It lives in libs/lake because it calls the internal ingestSource (the module boundary keeps
// tools/ on the public API); tools/bench/lake/append.ts measures the whole public append.
//   npx tsx libs/lake/test/bench/ingest-staging.ts --rows 200000 --runs 9
import { DuckDBInstance } from '@duckdb/node-api';
import { ingestSource } from '../../src/table/ingest';
import type { DeltaField } from '../../src/table/schema';

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const o = { rows: flag('rows', 200_000), runs: flag('runs', 9) };
const fields = [
  ['event_id', 'string'],
  ['entity_id', 'string'],
  ['version', 'long'],
  ['op', 'string'],
  ['event_time', 'timestamp'],
  ['amount', 'decimal(12,2)'],
  ['status', 'string'],
  ['kafka_offset', 'long'],
  ['bucket', 'integer'],
].map(([name, type]): DeltaField => ({ name, type: type as DeltaField['type'], nullable: true, metadata: {} }));

async function main() {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const base = Date.UTC(2026, 0, 1);
  // The same shape as append.ts (the merge-compaction bronze rows).
  const rows = Array.from({ length: o.rows }, (_, i) => ({
    event_id: `e-${i}`,
    entity_id: `order-${i % 200_000}`,
    version: i,
    op: i % 50 === 0 ? 'delete' : 'upsert',
    event_time: new Date(base + i * 10),
    amount: ((i % 100_000) / 100).toFixed(2),
    status: ['created', 'paid', 'shipped'][i % 3],
    kafka_offset: i,
    bucket: i % 16,
  }));
  const ms: Record<'baseline' | 'compact', number[]> = { baseline: [], compact: [] };
  for (let run = 0; run < o.runs; run++) {
    for (const mode of run % 2 ? (['compact', 'baseline'] as const) : (['baseline', 'compact'] as const)) {
      const t0 = performance.now();
      const t = await ingestSource(conn, fields, { rows }, '/tmp', { compact: mode === 'compact' });
      ms[mode].push(performance.now() - t0);
      await conn.run(`DROP TABLE ${t}`);
    }
    console.log(`run ${run}: baseline ${ms.baseline[run].toFixed(0)} ms, compact ${ms.compact[run].toFixed(0)} ms`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rate = (m: number) => Math.round(o.rows / (m / 1000));
  console.log(
    JSON.stringify({
      rows: o.rows,
      runs: o.runs,
      baselineMedianRowsPerSecond: rate(median(ms.baseline)),
      compactMedianRowsPerSecond: rate(median(ms.compact)),
      medianOfPairedRatios: +median(ms.baseline.map((b, i) => b / ms.compact[i])).toFixed(2),
    }),
  );
  conn.closeSync();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
