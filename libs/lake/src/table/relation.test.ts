import type { FileStats, LiveFile } from '../log/snapshot';
import type { Storage } from '../storage/storage';
import { filesRelationSql, translateReadError, type RelationSource } from './relation';
import type { DeltaField } from './schema';

const field = (name: string, type: DeltaField['type']): DeltaField => ({ name, type, nullable: true, metadata: {} });

/** A live file of partition `bucket` with the given stats (undefined: its add has none). */
function file(name: string, bucket: string, stats: FileStats | undefined): LiveFile {
  const key = `bucket=${bucket}/${name}.parquet`;
  return { path: key, key, partitionValues: { bucket }, size: 1, modificationTime: 0, add: { path: key, partitionValues: { bucket }, size: 1, modificationTime: 0, dataChange: true, stats: stats && JSON.stringify(stats) } };
}

const source: RelationSource = {
  schema: { type: 'struct', fields: [field('key', 'long'), field('note', 'string'), field('bucket', 'integer')] },
  partitionColumns: ['bucket'],
  stats: (f) => (f.add.stats ? (JSON.parse(f.add.stats) as FileStats) : undefined),
};
// Only localPath is used: the relation names each file by its local path.
const storage = { localPath: async (key: string) => `/lake/${key}` } as unknown as Storage;

/** Each read_parquet call's files and whether it unions by name. */
function scans(sql: string): { files: string[]; byName: boolean }[] {
  return [...sql.matchAll(/read_parquet\(\[([^\]]*)\]([^)]*)\)/g)].map((m) => ({
    files: [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1].replace('/lake/', '')),
    byName: m[2].includes('union_by_name=true'),
  }));
}

describe('filesRelationSql: which files need union_by_name', () => {
  const full = file('full', '0', { numRecords: 2, nullCount: { key: 0, note: 1 } });
  const old = file('old', '1', { numRecords: 2, nullCount: { key: 0 } }); // written before `note`
  const bare = file('bare', '1', undefined); // a writer that kept no stats

  it('files whose null counts show every column read share a plain scan, naming its columns', async () => {
    const sql = await filesRelationSql(storage, source, [full, file('full2', '0', { numRecords: 1, nullCount: { key: 0, note: 0 } })]);
    expect(scans(sql)).toEqual([{ files: ['bucket=0/full.parquet', 'bucket=0/full2.parquet'], byName: false }]);
    expect(sql).toContain('SELECT "key", "note", CAST(\'0\' AS INTEGER) AS "bucket" FROM read_parquet');
    // One partition value for every file of the scan: a constant, no file names read.
    expect(sql).not.toContain('filename');
  });

  it('a file lacking a column, or lacking stats, goes to a union_by_name scan of its own', async () => {
    const sql = await filesRelationSql(storage, source, [full, old, bare]);
    expect(scans(sql)).toEqual([
      { files: ['bucket=0/full.parquet'], byName: false },
      { files: ['bucket=1/old.parquet', 'bucket=1/bare.parquet'], byName: true },
    ]);
  });

  it('only the columns read need to be in the file', async () => {
    const sql = await filesRelationSql(storage, source, [full, old], { columns: ['key', 'bucket'] });
    expect(scans(sql)).toEqual([{ files: ['bucket=0/full.parquet', 'bucket=1/old.parquet'], byName: false }]);
    // Two partition values in one scan: looked up by file name.
    expect(sql).toContain("CASE filename WHEN '/lake/bucket=0/full.parquet' THEN CAST('0' AS INTEGER) WHEN '/lake/bucket=1/old.parquet' THEN CAST('1' AS INTEGER) END");
    expect(sql).toContain('filename=true');
  });
});

describe('filesRelationSql: fetching the files', () => {
  it('fetches several files at once (S3 cache misses download), a bounded number, keeping their order', async () => {
    let running = 0;
    let most = 0;
    const slow = {
      localPath: async (key: string) => {
        most = Math.max(most, ++running);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        return `/lake/${key}`;
      },
    } as unknown as Storage;
    const files = Array.from({ length: 30 }, (_, i) => file(`f${i}`, '0', { numRecords: 1, nullCount: { key: 0, note: 0 } }));
    const sql = await filesRelationSql(slow, source, files);
    expect(scans(sql)).toEqual([{ files: files.map((f) => f.key), byName: false }]);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(8);
  });
});

describe('translateReadError', () => {
  it('calls a file missing only when DuckDB says it does not exist', () => {
    for (const message of [
      'IO Error: No files found that match the pattern "/lake/a.parquet"',
      'IO Error: Cannot open file "/lake/a.parquet": No such file or directory',
    ]) {
      expect(translateReadError('query', new Error(message))).toMatchObject({ code: 'LAKE_DATA_FILE_MISSING', details: { file: '/lake/a.parquet' } });
    }
  });

  it('a file that would not open for another reason (file handles, permissions) is retryable, not "missing"', () => {
    for (const reason of ['Too many open files', 'Permission denied', 'Input/output error']) {
      const err = translateReadError('query', new Error(`IO Error: Cannot open file "/lake/a.parquet": ${reason}`));
      expect(err).toMatchObject({ code: 'LAKE_STORAGE_UNAVAILABLE', retryable: true, details: { file: '/lake/a.parquet' } });
      expect(err.message).toContain(reason);
    }
  });
});
