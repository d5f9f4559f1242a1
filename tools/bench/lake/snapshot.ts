// Snapshot load of a table with many commits and classic checkpoints every 10.
//   npx tsx tools/bench/lake/snapshot.ts --commits 10000
//   npx tsx tools/bench/lake/snapshot.ts --commits 2950 --refreshes 20
//       (also a writer's and a reader's refresh after each of 20 more commits, deep into a block
//       of 1000 versions: `refreshAfterCommitMs`)
// The log is written directly through Storage (one add per commit, like a streaming writer) so
// building it stays fast; checkpoints are written by LakeTable.checkpoint as the writer would.
import { LakeTable, LocalStorage, stringifyJson } from '@sluice/lake';
import { args, benchDir, timed } from './common';

const o = args({ commits: 10_000, every: 10, loads: 5, refreshes: 20 });

async function main() {
  const { dir, cleanup } = await benchDir('snapshot');
  try {
    const storage = new LocalStorage(dir);
    const table = await LakeTable.create(storage, { columns: [{ name: 'id', type: 'long' }, { name: 'p', type: 'integer' }], partitionColumns: ['p'] });
    /** Writes commit `v` directly (one add and one txn), as a streaming writer's. */
    const commit = async (v: number) => {
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
    };
    const build = await timed(async () => {
      for (let v = 1; v <= o.commits; v++) await commit(v);
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
    // A handle's refresh after one more commit: what a writer does before each commit and a
    // reader on its cadence (it reads only the new commits; finding them is the listing).
    const refreshes: number[] = [];
    for (let i = 1; i <= o.refreshes; i++) {
      await commit(o.commits + i);
      const r = await timed(() => table.snapshot());
      if (r.value.version !== o.commits + i) throw new Error('wrong snapshot');
      refreshes.push(r.ms);
    }
    refreshes.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        commits: o.commits,
        liveFiles: o.commits,
        medianLoadMs: Math.round(times[Math.floor(times.length / 2)]),
        bestLoadMs: Math.round(times[0]),
        cachedReloadMs: Math.round(cached.ms),
        refreshAfterCommitMs: refreshes.length > 0 ? +refreshes[Math.floor(refreshes.length / 2)].toFixed(2) : null,
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
