import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage, type ColumnSpec } from '../src';
import { deltaProbe, tempDir, type ProbeRow } from './helpers';

const columns: ColumnSpec[] = [
  { name: 'id', type: 'long', nullable: false },
  { name: 'name', type: 'string' },
  { name: 'amount', type: 'decimal(10,2)' },
  { name: 'ts', type: 'timestamp' },
  { name: 'version', type: 'long' },
  { name: 'region', type: 'string' },
];

describe('Sluice tables read by delta-rs (deltalake)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-interop');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('appends with txn, hostile partition values, then delta-rs reads rows, txn and history', async () => {
    const root = path.join(dir, 'orders silver ü');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['region'], name: 'orders' });
    const regions = ['US/East', 'a b%20c', "o'k\"q", 'größe', '', null, '50%'];
    const rows = regions.map((region, i) => ({ id: i + 1, name: `n${i}`, amount: '12.30', ts: new Date(Date.UTC(2026, 0, 1, 0, 0, i, 123)), version: 1, region }));
    const r1 = await table.append({ rows }, { txns: [{ appId: 'orders-ingest-0', version: 41 }] });
    expect(r1.version).toBe(1);
    expect(r1.rows).toBe(regions.length);
    const big = 2n ** 60n + 7n;
    await table.append({ rows: [{ id: 100, name: 'x', amount: 1, ts: '2026-01-02T00:00:00Z', version: 1, region: 'eu' }] }, { txns: [{ appId: 'orders-ingest-0', version: 42 }, { appId: 'big', version: big }] });

    const snap = await table.snapshot();
    expect(snap.version).toBe(2);
    expect(snap.txnVersion('orders-ingest-0')).toBe(42n);
    expect(snap.txnVersion('big')).toBe(big);

    const probe = await deltaProbe('read', root);
    expect(probe.version).toBe(2);
    expect(probe.protocol).toEqual([1, 2]);
    expect(probe.partitionColumns).toEqual(['region']);
    const byId = new Map<number, ProbeRow>(probe.rows.map((r: ProbeRow) => [r.id as number, r]));
    expect(byId.size).toBe(regions.length + 1);
    regions.forEach((region, i) => {
      // '' and null partition values are both null in Delta (DELTA.md §4)
      expect(byId.get(i + 1)?.region).toBe(region === '' ? null : region);
      expect(byId.get(i + 1)?.amount).toBe('12.30');
    });
    expect(byId.get(1)?.ts).toBe('2026-01-01T00:00:00.123000+00:00');
    expect((await deltaProbe('txn', root, 'orders-ingest-0')).version).toBe(42);
    const history = await deltaProbe('history', root);
    expect(history.map((h: ProbeRow) => h.operation)).toEqual(['WRITE', 'WRITE', 'CREATE TABLE']);
    expect(history[0].isBlindAppend).toBe(true);

    // Stats as delta-rs reads them: exact counts and ranges, partition column excluded.
    const adds = await deltaProbe('adds', root);
    const eu = adds.find((a: ProbeRow) => a['partition.region'] === 'eu');
    expect(eu).toMatchObject({ num_records: 1, 'min.id': 100, 'max.id': 100, 'null_count.name': 0 });
    expect(Object.keys(eu).some((k) => k === 'min.region' || k === 'max.region')).toBe(false);
    const first = adds.find((a: ProbeRow) => a['partition.region'] === 'US/East');
    expect(String(first['min.ts'])).toContain('2026-01-01');

    // Sluice's own query path sees the same rows.
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: table.storage, snapshot: snap } });
    try {
      const rowsBack = await session.queryJson('SELECT id, region FROM t WHERE region IS NOT DISTINCT FROM ? ORDER BY id', ['US/East']);
      expect(rowsBack).toEqual([{ id: '1', region: 'US/East' }]);
      const count = await session.query('SELECT count(*) AS n FROM t');
      expect(count[0].n).toBe(8n);
    } finally {
      session.close();
    }
  });

  it('a struct column keeps the file stats delta-rs reads (its nullCount would be per leaf), also after compaction', async () => {
    const root = path.join(dir, 'with struct');
    const struct: ColumnSpec = { name: 's', type: { type: 'struct', fields: [{ name: 'a', type: 'long', nullable: true, metadata: {} }] } };
    const table = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'id', type: 'long' }, struct], name: 'nested' });
    await table.append({ rows: [{ id: 1, s: { a: 1 } }, { id: 2, s: null }] });
    await table.append({ rows: [{ id: 3, s: { a: 3 } }] });
    const expectStats = async (files: number) => {
      const adds = await deltaProbe('adds', root);
      expect(adds).toHaveLength(files);
      // With a number for the struct's nullCount, delta-rs read every stat of the file as null.
      for (const a of adds) {
        expect(a.num_records).toBeGreaterThan(0);
        expect(a['min.id']).not.toBeNull();
        expect(a['null_count.id']).toBe(0);
      }
    };
    await expectStats(2);
    await table.compact({ targetFileBytes: 64 * 1024 * 1024 });
    await expectStats(1);
    expect((await deltaProbe('read', root)).rows.map((r: ProbeRow) => r.id).sort()).toEqual([1, 2, 3]);
  });

  it('merge upserts by version and deletes tombstones; delta-rs sees the current state', async () => {
    const root = path.join(dir, 'merge');
    const table = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'key', type: 'long' }, { name: 'v', type: 'long' }, { name: 'payload', type: 'string' }, { name: 'bucket', type: 'integer' }], partitionColumns: ['bucket'] });
    const initial = Array.from({ length: 100 }, (_, k) => ({ key: k, v: 1, payload: `p${k}`, bucket: k % 4 }));
    await table.append({ rows: initial });
    const batch = [
      { key: 1, v: 2, payload: 'updated', bucket: 1, op: 'upsert' },
      { key: 2, v: 1, payload: 'stale', bucket: 2, op: 'upsert' }, // same version: ignored
      { key: 3, v: 5, payload: null, bucket: 3, op: 'delete' },
      { key: 1000, v: 1, payload: 'new', bucket: 0, op: 'upsert' },
      { key: 1001, v: 1, payload: 'gone', bucket: 1, op: 'delete' }, // delete of an unknown key
    ];
    const result = await table.merge({ source: { rows: batch }, keys: ['key'], versionColumn: 'v', deleteColumn: 'op', txns: [{ appId: 'fold', version: 7 }] });
    expect(result).toMatchObject({ rowsInserted: 1, rowsUpdated: 1, rowsDeleted: 1 });
    expect(result.filesRewritten).toBe(2); // buckets 1 and 3; bucket 2 matched but did not change
    const probe = await deltaProbe('read', root);
    const byKey = new Map<number, ProbeRow>(probe.rows.map((r: ProbeRow) => [r.key as number, r]));
    expect(byKey.size).toBe(100);
    expect(byKey.get(1)).toMatchObject({ v: 2, payload: 'updated' });
    expect(byKey.get(2)).toMatchObject({ v: 1, payload: 'p2' });
    expect(byKey.has(3)).toBe(false);
    expect(byKey.get(1000)).toMatchObject({ payload: 'new', bucket: 0 });
    expect((await deltaProbe('txn', root, 'fold')).version).toBe(7);
  });

  it('writes the codec sluice.parquet.compression names on append, MERGE and compaction, and delta-rs reads those files', async () => {
    const root = path.join(dir, 'uncompressed');
    const kv = [{ name: 'key', type: 'long' as const }, { name: 'v', type: 'long' as const }, { name: 'payload', type: 'string' as const }, { name: 'bucket', type: 'integer' as const }];
    const table = await LakeTable.create(new LocalStorage(root), { columns: kv, partitionColumns: ['bucket'], properties: { 'sluice.parquet.compression': 'uncompressed' } });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({});
    // Each step's own files, checked right after it: by the end, compaction has rewritten the
    // appended files and the merge those of its bucket.
    const checked = new Set<string>();
    const codecsOfNewFiles = async (step: string) => {
      const fresh = (await table.snapshot()).files.filter((f) => !checked.has(f.key));
      expect({ step, newFiles: fresh.length > 0 }).toEqual({ step, newFiles: true });
      for (const f of fresh) {
        checked.add(f.key);
        const codecs = await session.query(`SELECT DISTINCT compression FROM parquet_metadata('${path.join(root, f.key).replace(/'/g, "''")}')`);
        expect({ step, file: f.key, codecs: codecs.map((c) => c.compression) }).toEqual({ step, file: f.key, codecs: ['UNCOMPRESSED'] });
      }
    };
    try {
      await table.append({ rows: Array.from({ length: 200 }, (_, k) => ({ key: k, v: 1, payload: `p${k}`, bucket: k % 2 })) });
      await codecsOfNewFiles('append');
      await table.merge({ source: { rows: [{ key: 5, v: 2, payload: 'updated', bucket: 1, op: 'upsert' }] }, keys: ['key'], versionColumn: 'v', deleteColumn: 'op' });
      await codecsOfNewFiles('merge');
      await table.append({ rows: [{ key: 500, v: 1, payload: 'late', bucket: 0 }] });
      await codecsOfNewFiles('second append');
      const compacted = await table.compact({});
      expect(compacted.filesAdded).toBeGreaterThan(0);
      await codecsOfNewFiles('compaction');
    } finally {
      session.close();
    }
    const probe = await deltaProbe('read', root);
    const byKey = new Map<number, ProbeRow>(probe.rows.map((r: ProbeRow) => [r.key as number, r]));
    expect(byKey.size).toBe(201);
    expect(byKey.get(5)).toMatchObject({ v: 2, payload: 'updated' });
    expect(byKey.get(500)).toMatchObject({ payload: 'late', bucket: 0 });
  });
});

describe('partition values as other engines write them', () => {
  it('takes an empty partition value as null (PROTOCOL.md): reads cast it, a merge finds the rows behind it', async () => {
    const root = await tempDir('empty-partition-value');
    const table = await LakeTable.create(new LocalStorage(root), {
      columns: [{ name: 'id', type: 'long', nullable: false }, { name: 'v', type: 'long' }, { name: 'p', type: 'integer' }],
      partitionColumns: ['p'],
    });
    await table.append({ rows: [{ id: 1, v: 1, p: null }] });
    // Another writer's commit naming the same file with p = '' (Spark and delta-rs write null so).
    const add = { ...(await table.snapshot()).files[0].add, partitionValues: { p: '' } };
    await fs.writeFile(path.join(root, '_delta_log', '00000000000000000002.json'), `${JSON.stringify({ commitInfo: { operation: 'WRITE' } })}\n${JSON.stringify({ add })}\n`);
    const rows = async () => {
      const engine = await LakeQueryEngine.create();
      const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
      try {
        return await session.queryJson('SELECT id::INTEGER AS id, v::INTEGER AS v, p FROM t ORDER BY id, v');
      } finally {
        session.close();
        engine.close();
      }
    };
    // Taken as text, '' failed the cast to INTEGER (LAKE_QUERY_FAILED).
    expect(await rows()).toEqual([{ id: 1, v: 1, p: null }]);
    // Taken as another partition than null, the merge did not look there and inserted id 1 again.
    await table.merge({ source: { rows: [{ id: 1, v: 2, p: null }] }, keys: ['id'], versionColumn: 'v' });
    expect(await rows()).toEqual([{ id: 1, v: 2, p: null }]);
  });
});
