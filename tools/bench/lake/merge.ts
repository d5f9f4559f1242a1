// MERGE benchmark: a 100k-event batch (half updates of random existing entities, half new
// entities, 2% tombstones) into a silver table of N entities, bucketed and clustered by key hash.
//   npx tsx tools/bench/lake/merge.ts --entities 1000000 --mode cow
//   npx tsx tools/bench/lake/merge.ts --entities 1000000 --mode amortised --batches 12
// cow: one copy-on-write MERGE per batch. amortised: each batch goes to the pending tail; when the
// tail exceeds --fraction of the table, the buckets with the highest pending share fold. The
// steady-state figure is the mean over the batches after the first fold (tail at its cap), so it
// includes the folds those batches trigger.
import { LakeTable, LocalStorage, type MergeResult } from '@sluice/lake';
import { MB, args, benchDir, timed } from './common';

const o = args({ entities: 1_000_000, batch: 100_000, buckets: 16, batches: 1, mode: 'cow', fraction: 0.1, fileRows: 1_000_000, keep: false });

const columns = [
  { name: 'entity_id', type: 'long' },
  { name: 'key_hash', type: 'long' },
  { name: 'version', type: 'long' },
  { name: 'status', type: 'string' },
  { name: 'amount', type: 'double' },
  { name: 'updated_at', type: 'timestamp' },
  { name: 'bucket', type: 'integer' },
] as const;

// key_hash: a 31-bit hash of the key, bucket = key_hash % buckets (a function of the key, as MERGE requires).
const hashOf = (id: string) => `(hash(${id}) % 2147483647)::BIGINT`;
const entitySql = (id: string, version: string, status: string) =>
  `SELECT ${id} AS entity_id, ${hashOf(id)} AS key_hash, ${version} AS version, ${status} AS status, (${id} % 1000) / 10.0 AS amount,
     TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_milliseconds(${id} % 86400000) AS updated_at, (${hashOf(id)} % ${o.buckets})::INTEGER AS bucket`;

function batchSql(n: number, entities: number, seed: number): string {
  const half = Math.floor(o.batch / 2);
  // Updates: random existing ids (version n+2); inserts: fresh ids above the table; 2% of updates are deletes.
  const upd = `SELECT DISTINCT (hash(i + ${seed * 7919}) % ${entities})::BIGINT AS id FROM range(${half}) t(i)`;
  return `SELECT *, CASE WHEN entity_id % 50 = 0 THEN 'delete' ELSE 'upsert' END AS op FROM (
      ${entitySql('u.id', String(n + 2), `'updated-${n}'`)} FROM (${upd}) u
      UNION ALL
      ${entitySql('(i + ' + (entities + n * half) + ')::BIGINT', '1', "'new'")} FROM range(${half}) t(i))`;
}

async function main() {
  const { dir, cleanup } = await benchDir(`merge-${o.entities}`);
  try {
    const table = await LakeTable.create(new LocalStorage(dir), { columns: columns.map((c) => ({ ...c })), partitionColumns: ['bucket'] });
    const load = await timed(() =>
      table.append({ sql: `${entitySql('i::BIGINT', '1', "'created'")} FROM range(${o.entities}) t(i)` }, { sortBy: ['key_hash'], maxRowsPerFile: o.fileRows }),
    );
    const snap = await table.snapshot();
    console.log(`load: ${o.entities} entities in ${snap.files.length} files, ${(snap.files.reduce((a, f) => a + f.size, 0) / MB).toFixed(1)} MB, ${(load.ms / 1000).toFixed(1)} s`);
    const results: MergeResult[] = [];
    let totalMs = 0;
    const times: number[] = [];
    for (let n = 0; n < o.batches; n++) {
      const r = await timed(() =>
        table.merge({
          source: { sql: batchSql(n, o.entities, n + 1) },
          keys: ['entity_id'],
          versionColumn: 'version',
          deleteColumn: 'op',
          clusterColumn: 'key_hash',
          maxRowsPerFile: o.fileRows,
          txns: [{ appId: 'bench', version: n }],
          amortise: o.mode === 'amortised' ? { foldFraction: o.fraction } : undefined,
        }),
      );
      totalMs += r.ms;
      times.push(r.ms);
      results.push(r.value);
      const v = r.value;
      console.log(
        `batch ${n}: ${(r.ms / 1000).toFixed(2)} s, files read ${v.filesRead} (${(v.bytesRead / MB).toFixed(1)} MB), rewritten ${v.filesRewritten} (${(v.bytesRewritten / MB).toFixed(1)} MB), written ${(v.bytesWritten / MB).toFixed(1)} MB, ` +
          `+${v.rowsInserted} ~${v.rowsUpdated} -${v.rowsDeleted}${v.foldedPartitions !== undefined ? `, folded ${v.foldedPartitions} buckets, pending ${v.pendingRows}` : ''}`,
      );
    }
    const sumOf = (k: keyof MergeResult) => results.reduce((a, r) => a + Number(r[k] ?? 0), 0);
    // Steady state (amortised): batches after the first one that folded, when the tail has reached its cap.
    const firstFold = results.findIndex((r) => (r.foldedPartitions ?? 0) > 0);
    const steady = firstFold >= 0 ? times.slice(firstFold + 1) : [];
    const steadyBytes = firstFold >= 0 ? results.slice(firstFold + 1).reduce((a, r) => a + r.bytesRewritten, 0) : 0;
    console.log(
      JSON.stringify({
        mode: o.mode,
        entities: o.entities,
        batch: o.batch,
        batches: o.batches,
        meanBatchSeconds: +(totalMs / o.batches / 1000).toFixed(3),
        meanBytesReadMB: +(sumOf('bytesRead') / o.batches / MB).toFixed(1),
        meanBytesRewrittenMB: +(sumOf('bytesRewritten') / o.batches / MB).toFixed(1),
        steadyBatches: steady.length,
        steadyMeanBatchSeconds: steady.length ? +(steady.reduce((a, b) => a + b, 0) / steady.length / 1000).toFixed(3) : null,
        steadyBytesRewrittenMBPerBatch: steady.length ? +(steadyBytes / steady.length / MB).toFixed(1) : null,
      }),
    );
  } finally {
    if (!o.keep) await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
