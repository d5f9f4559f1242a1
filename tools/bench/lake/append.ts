// Append throughput: JS row objects (the merge-compaction bronze path) → Parquet + commit.
//   npx tsx tools/bench/lake/append.ts --rows 500000 --buckets 16 --runs 3
import { LakeTable, LocalStorage } from '@sluice/lake';
import { MB, args, benchDir, timed } from './common';

const o = args({ rows: 500_000, buckets: 16, runs: 3 });

async function main() {
  const { dir, cleanup } = await benchDir('append');
  try {
    const table = await LakeTable.create(new LocalStorage(dir), {
      columns: [
        { name: 'event_id', type: 'string' },
        { name: 'entity_id', type: 'string' },
        { name: 'version', type: 'long' },
        { name: 'op', type: 'string' },
        { name: 'event_time', type: 'timestamp' },
        { name: 'amount', type: 'decimal(12,2)' },
        { name: 'status', type: 'string' },
        { name: 'kafka_offset', type: 'long' },
        { name: 'bucket', type: 'integer' },
      ],
      partitionColumns: ['bucket'],
    });
    const base = Date.UTC(2026, 0, 1);
    const make = (run: number) =>
      Array.from({ length: o.rows }, (_, i) => ({
        event_id: `e-${run}-${i}`,
        entity_id: `order-${i % 200_000}`,
        version: run * o.rows + i,
        op: i % 50 === 0 ? 'delete' : 'upsert',
        event_time: new Date(base + i * 10),
        amount: ((i % 100_000) / 100).toFixed(2),
        status: ['created', 'paid', 'shipped'][i % 3],
        kafka_offset: run * o.rows + i,
        bucket: i % o.buckets,
      }));
    const rates: number[] = [];
    const cpuMs: number[] = [];
    for (let run = 0; run < o.runs; run++) {
      const rows = make(run); // built outside the timing: the caller already holds decoded events
      const r = await timed(() => table.append({ rows }, { txns: [{ appId: 'bench-0', version: (run + 1) * o.rows - 1 }] }));
      const rate = o.rows / (r.ms / 1000);
      rates.push(rate);
      cpuMs.push(r.cpuMs);
      console.log(`run ${run}: ${o.rows} rows in ${(r.ms / 1000).toFixed(2)} s = ${Math.round(rate)} rows/s, ${r.value.filesAdded} files, ${(r.value.bytesWritten / MB).toFixed(1)} MB`);
    }
    // Baseline in the same run: the same shape generated inside DuckDB (no JS → DuckDB transfer),
    // i.e. what Parquet writing + stats + commit cost alone on this machine right now.
    const sqlRates: number[] = [];
    const sqlCpuMs: number[] = [];
    for (let run = 0; run < o.runs; run++) {
      const sql = `SELECT 'e-' || i AS event_id, 'order-' || (i % 200000) AS entity_id, i AS version, CASE WHEN i % 50 = 0 THEN 'delete' ELSE 'upsert' END AS op,
          TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_milliseconds(i * 10) AS event_time, ((i % 100000) / 100)::DECIMAL(12,2) AS amount,
          ['created', 'paid', 'shipped'][i % 3 + 1] AS status, i AS kafka_offset, (i % ${o.buckets})::INTEGER AS bucket FROM range(${o.rows}) t(i)`;
      const r = await timed(() => table.append({ sql }));
      sqlRates.push(o.rows / (r.ms / 1000));
      sqlCpuMs.push(r.cpuMs);
      console.log(`baseline run ${run} (rows generated in DuckDB): ${(r.ms / 1000).toFixed(2)} s = ${Math.round(o.rows / (r.ms / 1000))} rows/s`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      JSON.stringify({
        rows: o.rows,
        runs: o.runs,
        medianRowsPerSecond: Math.round(median(rates)),
        bestRowsPerSecond: Math.round(Math.max(...rates)),
        baselineMedianRowsPerSecond: Math.round(median(sqlRates)),
        jsRowsVsBaseline: +(median(rates) / median(sqlRates)).toFixed(2),
        medianCpuMsPerAppend: +median(cpuMs).toFixed(1),
        baselineMedianCpuMsPerAppend: +median(sqlCpuMs).toFixed(1),
      }),
    );
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
