// Snapshot load of a table with many commits and classic checkpoints every 10.
//   npx tsx tools/bench/lake/snapshot.ts --commits 10000
// The log is written directly through Storage (one add per commit, like a streaming writer) so
// building it stays fast; checkpoints are written by LakeTable.checkpoint as the writer would.
import { LakeTable, LocalStorage, stringifyJson } from '@sluice/lake';
import { args, benchDir, timed } from './common';

const o = args({ commits: 10_000, every: 10, loads: 5 });

async function main() {
  const { dir, cleanup } = await benchDir('snapshot');
  try {
    const storage = new LocalStorage(dir);
    const table = await LakeTable.create(storage, { columns: [{ name: 'id', type: 'long' }, { name: 'p', type: 'integer' }], partitionColumns: ['p'] });
    const build = await timed(async () => {
      for (let v = 1; v <= o.commits; v++) {
        const lines = [
          { commitInfo: { timestamp: Date.now(), operation: 'WRITE', isBlindAppend: true } },
          { txn: { appId: `app-${v % 12}`, version: v, lastUpdated: Date.now() } },
          {
            add: {
              path: `p=${v % 16}/part-${v}.parquet`,
              partitionValues: { p: String(v % 16) },
              size: 1000,
              modificationTime: Date.now(),
              dataChange: true,
              stats: stringifyJson({ numRecords: 10, minValues: { id: v * 10 }, maxValues: { id: v * 10 + 9 }, nullCount: { id: 0 } }),
            },
          },
        ];
        const ok = await storage.putIfAbsent(`_delta_log/${String(v).padStart(20, '0')}.json`, Buffer.from(lines.map((l) => stringifyJson(l)).join('\n') + '\n'));
        if (!ok) throw new Error(`version ${v} exists`);
        if (v % o.every === 0) await table.checkpoint(v);
      }
    });
    console.log(`built ${o.commits} commits with checkpoints every ${o.every} in ${(build.ms / 1000).toFixed(1)} s`);
    // Each timed load through a new handle: a handle keeps its latest snapshot and answers the
    // next call after one log listing when nothing was committed (that is `cachedReloadMs`).
    const times: number[] = [];
    for (let i = 0; i < o.loads; i++) {
      const r = await timed(() => LakeTable.open(new LocalStorage(dir)).then((t) => t.snapshot()));
      if (r.value.version !== o.commits || r.value.files.length !== o.commits) throw new Error('wrong snapshot');
      times.push(r.ms);
    }
    times.sort((a, b) => a - b);
    await table.snapshot();
    const cached = await timed(() => table.snapshot());
    console.log(JSON.stringify({ commits: o.commits, liveFiles: o.commits, medianLoadMs: Math.round(times[Math.floor(times.length / 2)]), bestLoadMs: Math.round(times[0]), cachedReloadMs: Math.round(cached.ms) }));
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
