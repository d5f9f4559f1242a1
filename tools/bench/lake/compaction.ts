// Compaction throughput: many small files of one partition bin-packed into large ones.
//   npx tsx tools/bench/lake/compaction.ts --files 200 --rowsPerFile 20000
import { LakeTable, LocalStorage } from '@sluice/lake';
import { MB, args, benchDir, timed } from './common';

const o = args({ files: 200, rowsPerFile: 20_000, target: 128 });

async function main() {
  const { dir, cleanup } = await benchDir('compaction');
  try {
    const table = await LakeTable.create(new LocalStorage(dir), {
      columns: [
        { name: 'entity_id', type: 'long' },
        { name: 'version', type: 'long' },
        { name: 'status', type: 'string' },
        { name: 'amount', type: 'double' },
        { name: 'updated_at', type: 'timestamp' },
        { name: 'payload', type: 'string' },
        { name: 'day', type: 'date' },
      ],
      partitionColumns: ['day'],
    });
    // One append writing many small files at once (maxRowsPerFile), like a day of micro-batches.
    const total = o.files * o.rowsPerFile;
    await table.append(
      {
        sql: `SELECT i AS entity_id, i % 7 AS version, 'status-' || (i % 5) AS status, random() * 1000 AS amount,
                TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_milliseconds(i) AS updated_at, md5(i::VARCHAR) AS payload, DATE '2026-01-01' AS day
              FROM range(${total}) t(i)`,
      },
      { maxRowsPerFile: o.rowsPerFile },
    );
    const before = await table.snapshot();
    const r = await timed(() => table.compact({ targetFileBytes: o.target * MB }));
    const mbps = r.value.bytesRemoved / MB / (r.ms / 1000);
    console.log(`compacted ${r.value.filesRemoved} files (${(r.value.bytesRemoved / MB).toFixed(1)} MB) into ${r.value.filesAdded} (${(r.value.bytesAdded / MB).toFixed(1)} MB) in ${(r.ms / 1000).toFixed(2)} s`);
    console.log(JSON.stringify({ filesBefore: before.files.length, rows: total, inputMB: +(r.value.bytesRemoved / MB).toFixed(1), seconds: +(r.ms / 1000).toFixed(2), mbPerSecond: +mbps.toFixed(1) }));
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
