// Delta tables on a real S3-compatible server (SeaweedFS): LakeTable over S3Storage, concurrent
// writers committing through If-None-Match, and delta-rs (Python `deltalake`) reading the result.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LakeQueryEngine, LakeTable, PINNED_OVERSHOOT, S3Storage, type ColumnSpec } from '../src';
import { testS3 } from '@sluice/testing';

const VENV_PYTHON = path.join(os.homedir(), '.cache/sluice/venv/bin/python');

// delta-rs reading the table straight from S3: version, row count, distinct keys, key sum and txn versions.
const DELTA_RS_READ = `
import json, sys
from deltalake import DeltaTable
uri, endpoint, key, secret = sys.argv[1:5]
dt = DeltaTable(uri, storage_options={
    "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
    "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
})
t = dt.to_pyarrow_table()
p = dt.protocol()
print(json.dumps({
    "version": dt.version(),
    "protocol": [p.min_reader_version, p.min_writer_version],
    "partitionColumns": dt.metadata().partition_columns,
    "rows": t.num_rows,
    "distinctKeys": len(set(t.column("key").to_pylist())),
    "keySum": sum(t.column("key").to_pylist()),
    "txn": {a: dt.transaction_version(a) for a in sys.argv[5:]},
}))
`;

// delta-rs appending to the same table: it commits with If-None-Match too (conditional_put=etag
// for non-AWS endpoints), so both writers share the one mechanism (DELTA.md §6).
const DELTA_RS_APPEND = `
import json, sys
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
uri, endpoint, key, secret, first, count = sys.argv[1:7]
opts = {
    "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret,
    "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    "AWS_CONDITIONAL_PUT": "etag",
}
keys = list(range(int(first), int(first) + int(count)))
t = pa.table({
    "key": pa.array(keys, pa.int64()),
    "payload": ["p%d" % k for k in keys],
    "bucket": pa.array([k % 4 for k in keys], pa.int32()),
})
write_deltalake(uri, t, mode="append", storage_options=opts)
print(json.dumps({"version": DeltaTable(uri, storage_options=opts).version()}))
`;

// The delta-rs process has twice died with "terminate called without an active exception", the
// C++ runtime's abort for a thread still running when the interpreter tears down. Leaving with
// os._exit once the answer is flushed skips that teardown. A crash before the answer still fails
// the test, and the test then checks the answer against the table.
const EXIT_AFTER_ANSWER = `
sys.stdout.flush()
import os
os._exit(0)
`;

function runPython(args: string[], script = DELTA_RS_READ): Promise<string> {
  script += EXIT_AFTER_ANSWER;
  return new Promise((resolve, reject) => {
    execFile(VENV_PYTHON, ['-c', script, ...args], { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`deltalake failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

const columns: ColumnSpec[] = [
  { name: 'key', type: 'long' },
  { name: 'payload', type: 'string' },
  { name: 'bucket', type: 'integer' },
];

function rows(from: number, to: number) {
  return Array.from({ length: to - from }, (_, i) => ({ key: from + i, payload: `p${from + i}`, bucket: (from + i) % 4 }));
}

const sumTo = (n: number) => (n * (n - 1)) / 2;

describe('Delta tables on S3', () => {
  const s3 = testS3();
  const prefix = `it/s3-table-${randomUUID()}`;
  const opened: S3Storage[] = [];
  let workDir: string;

  function storage(tag: string, cacheBytes = 32 * 1024 * 1024): S3Storage {
    const s = new S3Storage({ ...s3, prefix, cache: { dir: path.join(workDir, `cache-${tag}`), maxBytes: cacheBytes } });
    opened.push(s);
    return s;
  }

  // Keys are unique in every table here, so `distinct` must equal `n`: a file read twice in place
  // of a lost one can match the count and even the sum, never the distinct count.
  async function countRows(table: LakeTable): Promise<{ n: number; distinct: number; keySum: number }> {
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      const [row] = await session.query('SELECT count(*) AS n, count(DISTINCT key) AS d, sum(key) AS s FROM t');
      return { n: Number(row.n), distinct: Number(row.d), keySum: Number(row.s) };
    } finally {
      session.close();
    }
  }

  beforeAll(async () => {
    const base = process.env.SLUICE_TEST_DIR ?? os.tmpdir();
    await fs.mkdir(base, { recursive: true });
    workDir = await fs.mkdtemp(path.join(base, 's3-table-'));
  });

  afterAll(async () => {
    const cleaner = storage('cleanup');
    await cleaner.delete((await cleaner.list('')).map((o) => o.key));
    for (const s of opened) s.destroy();
    await fs.rm(workDir, { recursive: true, force: true });
  });

  it('creates, appends with txns, checkpoints and reads back through a fresh client and cache', async () => {
    const table = await LakeTable.create(storage('writer'), { columns, partitionColumns: ['bucket'] }, { scratchDir: path.join(workDir, 'scratch') });
    await table.append({ rows: rows(0, 100) }, { txns: [{ appId: 'orders-0', version: 99 }] });
    await table.append({ rows: rows(100, 250) }, { txns: [{ appId: 'orders-0', version: 249 }, { appId: 'orders-1', version: 7 }] });
    const cp = await table.checkpoint();
    expect(cp.version).toBe(2);
    await table.append({ rows: rows(250, 300) }, { txns: [{ appId: 'orders-0', version: 299 }] });

    const keys = (await table.storage.list('')).map((o) => o.key);
    expect(keys).toContain('_delta_log/00000000000000000002.checkpoint.parquet');
    expect(keys.filter((k) => k.startsWith('bucket=')).every((k) => /^bucket=[0-3]\/part-.*\.parquet$/.test(k))).toBe(true);

    // Another process: new client, empty cache, snapshot through the checkpoint.
    const reader = await LakeTable.open(storage('reader'));
    const snap = await reader.snapshot();
    expect(snap.version).toBe(3);
    expect(snap.txnVersion('orders-0')).toBe(299n);
    expect(snap.txnVersion('orders-1')).toBe(7n);
    expect(await countRows(reader)).toEqual({ n: 300, distinct: 300, keySum: sumTo(300) });
  });

  it('reads a snapshot with more files than its cache holds: files a query was handed stay until it is done', async () => {
    const table = await LakeTable.open(storage('writer-many'));
    const snap = await table.snapshot();
    expect(snap.files.length).toBeGreaterThanOrEqual(8);
    // A cache of 60 % of the files' bytes: the query's files do not fit its size, but do fit the
    // room pinned files may take (PINNED_OVERSHOOT). Before, downloads evicted earlier files while
    // the query was still collecting paths, and DuckDB found them missing.
    const bytes = snap.files.reduce((n, f) => n + f.size, 0);
    expect(bytes).toBeLessThanOrEqual(Math.ceil(bytes * 0.6) * PINNED_OVERSHOOT);
    const tiny = storage('tiny', Math.ceil(bytes * 0.6));
    const engine = await LakeQueryEngine.create();
    expect(await engine.read({ t: { storage: tiny, snapshot: snap } }, 'SELECT count(*) AS n, count(DISTINCT key) AS d, sum(key) AS s FROM t')).toEqual([{ n: '300', d: '300', s: String(sumTo(300)) }]);
    const session = await engine.open({ t: { storage: tiny, snapshot: snap } });
    try {
      const [row] = await session.query('SELECT count(*) AS n FROM t');
      expect(Number(row.n)).toBe(300);
    } finally {
      session.close();
    }
  });

  // MERGE and compaction read their inputs through the same cache without pinning them: a
  // download evicted the files fetched before it, DuckDB found them missing, and the write failed
  // as LAKE_DATA_FILE_MISSING, every time its inputs passed the cache.
  it('merges and compacts inputs larger than its cache: the files a write reads stay until it is done', async () => {
    const at = (tag: string, cacheBytes = 32 * 1024 * 1024) => {
      const s = new S3Storage({ ...s3, prefix: `${prefix}-merge`, cache: { dir: path.join(workDir, `cache-merge-${tag}`), maxBytes: cacheBytes } });
      opened.push(s);
      return s;
    };
    const versioned = (from: number, to: number, v: number) => rows(from, to).map((r) => ({ ...r, v }));
    const scratchDir = path.join(workDir, 'scratch-merge');
    const table = await LakeTable.create(at('writer'), { columns: [...columns, { name: 'v', type: 'long' }], partitionColumns: ['bucket'] }, { scratchDir });
    try {
      for (let i = 0; i < 4; i++) await table.append({ rows: versioned(i * 75, (i + 1) * 75, 1) });
      const snap = await table.snapshot();
      expect(snap.files.length).toBe(16);
      const bytes = snap.files.reduce((n, f) => n + f.size, 0);
      const writer = await LakeTable.open(at('tiny', Math.ceil(bytes * 0.6)), { scratchDir });
      // Every key one version up: every file is read and rewritten.
      const merged = await writer.merge({ source: { rows: versioned(0, 300, 2) }, keys: ['key'], versionColumn: 'v' });
      expect(merged.rowsUpdated).toBe(300);
      await writer.append({ rows: versioned(300, 400, 1) });
      await writer.append({ rows: versioned(400, 500, 1) });
      expect((await writer.compact()).filesRemoved).toBeGreaterThan(4);
      expect(await countRows(await LakeTable.open(at('reader')))).toEqual({ n: 500, distinct: 500, keySum: sumTo(500) });
    } finally {
      const cleaner = at('cleanup');
      await cleaner.delete((await cleaner.list('')).map((o) => o.key));
    }
  });

  // The file cache kept checkpoints by key alone, across restarts: a table dropped and created
  // again at the same place was read through the old table's cached N.checkpoint.parquet (its
  // schema, its files), and the next checkpoint wrote that into S3 for good.
  it('reads the checkpoint of a table created again at the same place, not the cached one of the old table', async () => {
    const cacheDir = path.join(workDir, 'cache-recreated');
    const at = () => {
      const s = new S3Storage({ ...s3, prefix: `${prefix}-recreated`, cache: { dir: cacheDir, maxBytes: 32 * 1024 * 1024 } });
      opened.push(s);
      return s;
    };
    const make = async (extra: ColumnSpec[], n: number) => {
      const t = await LakeTable.create(at(), { columns: [...columns, ...extra], partitionColumns: ['bucket'] }, { scratchDir: path.join(workDir, 'scratch-recreated') });
      for (let i = 0; i < 2; i++) await t.append({ rows: rows(i * n, (i + 1) * n) });
      await t.checkpoint(); // at version 2, same key both times
    };
    const dropAll = async () => {
      const s = at();
      await s.delete((await s.list('')).map((o) => o.key));
    };
    try {
      await make([], 10);
      expect((await (await LakeTable.open(at())).snapshot()).files.length).toBe(8); // the old checkpoint is now cached
      await dropAll();
      await make([{ name: 'note', type: 'string' }], 3);
      const snap = await (await LakeTable.open(at())).snapshot(); // a new process, the same cache directory
      expect(snap.schema.fields.map((f) => f.name)).toEqual(['key', 'payload', 'bucket', 'note']);
      expect(await countRows(await LakeTable.open(at()))).toEqual({ n: 6, distinct: 6, keySum: sumTo(6) });
    } finally {
      await dropAll();
    }
  });

  it('two writers appending at once both land, in contiguous versions, nothing lost', async () => {
    const a = await LakeTable.open(storage('writer-a'), { scratchDir: path.join(workDir, 'scratch-a') });
    const b = await LakeTable.open(storage('writer-b'), { scratchDir: path.join(workDir, 'scratch-b') });
    const start = (await a.snapshot()).version;
    const rounds = 4;
    const results = await Promise.all([
      (async () => {
        const out = [];
        for (let i = 0; i < rounds; i++) out.push(await a.append({ rows: rows(1000 + i * 10, 1010 + i * 10) }, { txns: [{ appId: 'writer-a', version: i }] }));
        return out;
      })(),
      (async () => {
        const out = [];
        for (let i = 0; i < rounds; i++) out.push(await b.append({ rows: rows(2000 + i * 10, 2010 + i * 10) }, { txns: [{ appId: 'writer-b', version: i }] }));
        return out;
      })(),
    ]);
    const versions = results.flat().map((r) => r.version).sort((x, y) => x - y);
    expect(versions).toEqual(Array.from({ length: 2 * rounds }, (_, i) => start + 1 + i));

    const commits = (await a.storage.list('_delta_log/')).filter((o) => /\d{20}\.json$/.test(o.key));
    expect(commits).toHaveLength(start + 1 + 2 * rounds);
    const snap = await a.snapshot();
    expect(snap.txnVersion('writer-a')).toBe(BigInt(rounds - 1));
    expect(snap.txnVersion('writer-b')).toBe(BigInt(rounds - 1));
    const added = 2 * rounds * 10;
    const addedKeySum = [1000, 2000].reduce((acc, base) => acc + rounds * 10 * base + sumTo(rounds * 10), 0);
    expect(await countRows(a)).toEqual({ n: 300 + added, distinct: 300 + added, keySum: sumTo(300) + addedKeySum });
  });

  it('delta-rs (Python deltalake) reads the S3 table as Sluice wrote it', async () => {
    await fs.access(VENV_PYTHON).catch(() => {
      throw new Error(`${VENV_PYTHON} is missing: run tools/setup/steps.d/10-python.sh (installs deltalake)`);
    });
    const table = await LakeTable.open(storage('check'));
    const snap = await table.snapshot();
    const expected = await countRows(table);
    const out = JSON.parse(
      await runPython([`s3://${s3.bucket}/${prefix}`, s3.endpoint, s3.credentials.accessKeyId, s3.credentials.secretAccessKey, 'orders-0', 'orders-1', 'writer-a']),
    );
    expect(out).toEqual({
      version: snap.version,
      protocol: [1, 2],
      partitionColumns: ['bucket'],
      rows: expected.n,
      distinctKeys: expected.distinct,
      keySum: expected.keySum,
      txn: { 'orders-0': 299, 'orders-1': 7, 'writer-a': 3 },
    });
  });

  it('delta-rs and Sluice append to the same S3 table in turn; each sees the other', async () => {
    const table = await LakeTable.open(storage('mixed'), { scratchDir: path.join(workDir, 'scratch-mixed') });
    const before = await table.snapshot();
    const beforeCount = await countRows(table);
    const args = [`s3://${s3.bucket}/${prefix}`, s3.endpoint, s3.credentials.accessKeyId, s3.credentials.secretAccessKey];

    const written = JSON.parse(await runPython([...args, '5000', '40'], DELTA_RS_APPEND));
    expect(written.version).toBe(before.version + 1);
    const afterRs = await table.snapshot();
    expect(afterRs.version).toBe(before.version + 1);
    expect(afterRs.protocol).toMatchObject({ minReaderVersion: 1, minWriterVersion: 2 });
    const rsKeys = 40 * 5000 + sumTo(40);
    expect(await countRows(table)).toEqual({ n: beforeCount.n + 40, distinct: beforeCount.n + 40, keySum: beforeCount.keySum + rsKeys });

    const appended = await table.append({ rows: rows(6000, 6010) });
    expect(appended.version).toBe(before.version + 2);
    const read = JSON.parse(await runPython(args));
    expect(read).toMatchObject({ version: before.version + 2, rows: beforeCount.n + 50, keySum: beforeCount.keySum + rsKeys + 10 * 6000 + sumTo(10) });
  });
});
