// Resident memory of a writer that streams small commits, as merge-compaction does: each round
// appends a batch to a bronze-like table (32 buckets × one date) and MERGEs it into a silver-like
// one (32 buckets). Prints RSS and the V8 heap every `--every` rounds.
//   npx tsx tools/bench/lake/memory.ts --rounds 150 --rows 3000
// Without --file-cache it runs itself four times, DuckDB's external file cache on, off (the
// library's default), off, on: the machine's drift during the invocation cancels out of the times.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { LakeTable, LocalStorage, configureSharedDuckDB, type ColumnSpec } from '@sluice/lake';
import { MB, args, benchDir } from './common';

const o = args({ rounds: 150, rows: 3000, entities: 50_000, every: 30, 'file-cache': '' });
const BUCKETS = 32;

const COLUMNS: ColumnSpec[] = [
  ...['event_id', 'producer', 'op', 'order_id', 'customer_id', 'status', 'currency', 'coupon_code'].map((name) => ({ name, type: 'string' as const })),
  { name: 'version', type: 'long' },
  { name: 'total_cents', type: 'long' },
  { name: '_key_hash', type: 'long' },
  { name: 'event_time', type: 'timestamp' },
  { name: 'bucket', type: 'integer' },
];

async function measure(fileCache: boolean): Promise<void> {
  await configureSharedDuckDB({ externalFileCache: fileCache });
  const { dir, cleanup } = await benchDir('memory');
  try {
    const bronze = await LakeTable.create(new LocalStorage(path.join(dir, 'bronze')), { columns: [...COLUMNS, { name: 'event_date', type: 'date' }], partitionColumns: ['event_date', 'bucket'] });
    const silver = await LakeTable.create(new LocalStorage(path.join(dir, 'silver')), { columns: COLUMNS, partitionColumns: ['bucket'] });
    const started = performance.now();
    let offset = 0;
    for (let round = 1; round <= o.rounds; round++) {
      const rows = Array.from({ length: o.rows }, (_, i) => {
        const n = offset + i;
        const entity = n % o.entities;
        return { event_id: `e${n}`, producer: 'bench', op: 'upsert', order_id: `o${entity}`, customer_id: `c${n % 300}`, status: 'paid', currency: 'EUR', coupon_code: null, version: n, total_cents: 100 + i, _key_hash: entity * 7919, event_time: new Date(), bucket: entity % BUCKETS };
      });
      offset += o.rows;
      await bronze.append({ rows: rows.map((r) => ({ ...r, event_date: '2026-12-01' })) });
      await silver.merge({ source: { rows }, keys: ['order_id'], versionColumn: 'version', clusterColumn: '_key_hash' });
      if (round % o.every === 0) {
        const m = process.memoryUsage();
        const s = ((performance.now() - started) / 1000).toFixed(1);
        console.log(`file cache ${fileCache ? 'on ' : 'off'} round ${round}: rss ${(m.rss / MB).toFixed(0)} MB, V8 heap ${(m.heapUsed / MB).toFixed(0)} MB, ${s} s`);
      }
    }
  } finally {
    await cleanup();
  }
}

async function main() {
  if (o['file-cache'] === 'on' || o['file-cache'] === 'off') return measure(o['file-cache'] === 'on');
  if (o['file-cache'] !== '') throw new Error('--file-cache is on or off');
  for (const mode of ['on', 'off', 'off', 'on']) {
    const own = process.argv.slice(2).filter((a, i, all) => a !== '--file-cache' && all[i - 1] !== '--file-cache');
    const child = spawnSync(process.execPath, [...process.execArgv, __filename, ...own, '--file-cache', mode], { stdio: 'inherit' });
    if (child.status !== 0) throw new Error(`the ${mode} run failed (exit ${child.status})`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
