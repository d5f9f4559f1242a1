import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { sqlString, withConnection } from '../duck';
import type { Storage } from '../storage/storage';
import { LAST_CHECKPOINT_KEY, checkpointKey } from './actions';
import { stringifyJson } from './json';
import type { Snapshot } from './snapshot';

// The classic V1 checkpoint schema (DELTA.md §5); DuckDB writes MAP and LIST as Spark expects.
const CHECKPOINT_COLUMNS: Record<string, string> = {
  txn: 'STRUCT(appId VARCHAR, version BIGINT, lastUpdated BIGINT)',
  add: 'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, modificationTime BIGINT, dataChange BOOLEAN, tags MAP(VARCHAR, VARCHAR), stats VARCHAR)',
  remove: 'STRUCT(path VARCHAR, deletionTimestamp BIGINT, dataChange BOOLEAN, extendedFileMetadata BOOLEAN, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT)',
  metaData:
    'STRUCT(id VARCHAR, name VARCHAR, description VARCHAR, format STRUCT(provider VARCHAR, options MAP(VARCHAR, VARCHAR)), schemaString VARCHAR, partitionColumns VARCHAR[], configuration MAP(VARCHAR, VARCHAR), createdTime BIGINT)',
  protocol: 'STRUCT(minReaderVersion INTEGER, minWriterVersion INTEGER)',
};

/**
 * Writes the classic checkpoint of `snapshot` (protocol, metaData, ALL txn rows, live adds and
 * tombstones newer than `tombstoneCutoffMs`), then `_last_checkpoint` — in that order, since
 * readers trust the hint only after checking the checkpoint exists.
 */
export async function writeCheckpoint(storage: Storage, snapshot: Snapshot, scratchDir: string, tombstoneCutoffMs: number): Promise<{ rows: number; bytes: number }> {
  const lines: string[] = [];
  lines.push(stringifyJson({ protocol: { minReaderVersion: snapshot.protocol.minReaderVersion, minWriterVersion: snapshot.protocol.minWriterVersion } }));
  lines.push(stringifyJson({ metaData: snapshot.metadata }));
  for (const txn of snapshot.txnActions()) lines.push(stringifyJson({ txn }));
  for (const f of snapshot.files) lines.push(stringifyJson({ add: { ...f.add, dataChange: false } }));
  for (const r of snapshot.tombstones) {
    if ((r.deletionTimestamp ?? 0) > tombstoneCutoffMs) lines.push(stringifyJson({ remove: { ...r, dataChange: false } }));
  }
  await fs.mkdir(scratchDir, { recursive: true });
  const base = path.join(scratchDir, `checkpoint-${randomUUID()}`);
  try {
    await fs.writeFile(`${base}.ndjson`, lines.join('\n') + '\n');
    const columns = `{${Object.entries(CHECKPOINT_COLUMNS).map(([k, v]) => `${sqlString(k)}: ${sqlString(v)}`).join(', ')}}`;
    await withConnection((conn) =>
      conn.run(
        `COPY (SELECT ${Object.keys(CHECKPOINT_COLUMNS).map((c) => `"${c}"`).join(', ')} FROM read_json(${sqlString(`${base}.ndjson`)}, format='newline_delimited', columns=${columns}, maximum_object_size=1073741824))
         TO ${sqlString(`${base}.parquet`)} (FORMAT parquet, COMPRESSION snappy)`,
      ),
    );
    const body = await fs.readFile(`${base}.parquet`);
    await storage.put(checkpointKey(snapshot.version), body);
    const hint = { version: snapshot.version, size: lines.length, sizeInBytes: body.length, numOfAddFiles: snapshot.files.length };
    await storage.put(LAST_CHECKPOINT_KEY, Buffer.from(JSON.stringify(hint)));
    return { rows: lines.length, bytes: body.length };
  } finally {
    await fs.rm(`${base}.ndjson`, { force: true });
    await fs.rm(`${base}.parquet`, { force: true });
  }
}
