import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage, type ColumnSpec } from '../src';
import { commitFile, deltaProbe, tempDir } from './helpers';

const columns: ColumnSpec[] = [
  { name: 'key', type: 'long' },
  { name: 'v', type: 'long' },
  { name: 'payload', type: 'string' },
  { name: 'bucket', type: 'integer' },
];

function rows(from: number, to: number, v = 1) {
  return Array.from({ length: to - from }, (_, i) => ({ key: from + i, v, payload: `p${from + i}-${v}`, bucket: (from + i) % 3 }));
}

async function count(table: LakeTable, version?: number): Promise<number> {
  const engine = await LakeQueryEngine.create();
  const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot(version === undefined ? {} : { version }) } });
  try {
    return Number((await session.query('SELECT count(*) AS n FROM t'))[0].n);
  } finally {
    session.close();
  }
}

/** Rows of `sql` over the table's current view (the table with its amortised tail). */
async function viewRows(table: LakeTable, sql: string): Promise<Record<string, unknown>[]> {
  const engine = await LakeQueryEngine.create();
  const session = await engine.open({ t: await table.currentView() });
  try {
    return await session.query(sql);
  } finally {
    session.close();
  }
}

/** Local storage whose first DELETE commit in an amortised tail fails without landing. */
class FailFirstTailDelete extends LocalStorage {
  failed = 0;
  override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    if (this.failed === 0 && /^_sluice_tail\/_delta_log\/\d+\.json$/.test(key) && Buffer.from(body).includes('"operation":"DELETE"')) {
      this.failed += 1;
      throw new Error(`${key}: injected failure of the tail's DELETE commit`);
    }
    return super.putIfAbsent(key, body);
  }
}

describe('table lifecycle: checkpoints, compaction, vacuum, log cleanup, time travel, schema evolution', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-lifecycle');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('checkpoints every 10 commits with every txn row; delta-rs reads after checkpoint, compaction, vacuum and log cleanup', async () => {
    const root = path.join(dir, 'cp');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    // appId "early" is written only before the checkpoint: it must survive in the checkpoint.
    await table.append({ rows: rows(0, 10) }, { txns: [{ appId: 'early', version: 5 }] });
    for (let i = 1; i < 11; i++) await table.append({ rows: rows(i * 10, i * 10 + 10) }, { txns: [{ appId: 'stream', version: i }] });
    const log = await fs.readdir(path.join(root, '_delta_log'));
    expect(log).toContain('00000000000000000010.checkpoint.parquet');
    const hint = JSON.parse(await fs.readFile(path.join(root, '_delta_log/_last_checkpoint'), 'utf8'));
    expect(hint).toMatchObject({ version: 10 });

    const snap = await table.snapshot();
    expect(snap.version).toBe(11);
    expect(snap.txnVersion('early')).toBe(5n);
    expect(snap.txnVersion('stream')).toBe(10n);
    expect(await count(table)).toBe(110);

    // Compaction: 33 small files in 3 partitions become 3, dataChange=false.
    const before = snap.files.length;
    const compacted = await table.compact({ targetFileBytes: 64 * 1024 * 1024 });
    expect(compacted.filesRemoved).toBe(before);
    expect(compacted.filesAdded).toBe(3);
    const commitLines = (await fs.readFile(path.join(root, '_delta_log', `${String(compacted.version).padStart(20, '0')}.json`), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    expect(commitLines.filter((a) => a.add || a.remove).every((a) => (a.add ?? a.remove).dataChange === false)).toBe(true);
    expect(await count(table)).toBe(110);

    // Vacuum with zero retention deletes the compacted-away files and an orphan, nothing else.
    await fs.writeFile(path.join(root, 'bucket=1', 'part-orphan.parquet'), 'crash leftover');
    await fs.mkdir(path.join(root, '_sluice'), { recursive: true });
    await fs.writeFile(path.join(root, '_sluice', 'keep.me'), 'x');
    await fs.writeFile(path.join(root, '.hidden'), 'x');
    const vac = await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000 });
    expect(vac.filesDeleted).toContain('bucket=1/part-orphan.parquet');
    expect(vac.filesDeleted.length).toBe(before + 1);
    expect(vac.filesDeleted.some((k) => k.startsWith('_') || k.startsWith('.'))).toBe(false);
    await expect(fs.access(path.join(root, '_sluice', 'keep.me'))).resolves.toBeUndefined();

    // Log cleanup with zero retention: commits before the newest checkpoint go.
    for (let i = 0; i < 8; i++) await table.append({ rows: rows(1000 + i, 1001 + i) });
    const latest = await table.snapshot();
    expect(latest.version).toBe(20);
    expect(await fs.readdir(path.join(root, '_delta_log'))).toContain('00000000000000000020.checkpoint.parquet');
    const cleaned = await table.cleanupLog({ retentionMs: 0, nowMs: Date.now() + 1000 });
    expect(cleaned.filesDeleted).toBeGreaterThan(0);
    const remaining = await fs.readdir(path.join(root, '_delta_log'));
    expect(remaining).not.toContain('00000000000000000000.json');
    const after = await table.snapshot();
    expect(after.version).toBe(20);
    expect(after.txnVersion('early')).toBe(5n);
    expect(await count(table)).toBe(118);

    const probe = await deltaProbe('read', root);
    expect(probe.version).toBe(20);
    expect(probe.rows.length).toBe(118);
    expect((await deltaProbe('txn', root, 'early')).version).toBe(5);
    expect((await deltaProbe('txn', root, 'stream')).version).toBe(10);
  });

  // With the target alone, a file below it was rewritten whole to take in a few small ones, pass
  // after pass, until it reached the target: bronze was written several times over.
  it('compaction rewrites only the files below the small-file bound it is given, packed up to the target', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'small-bound')), { columns: columns.filter((c) => c.name !== 'bucket') });
    const plain = (from: number, to: number) => rows(from, to).map(({ bucket: _, ...r }) => r);
    await table.append({ rows: plain(0, 3000) });
    const [big] = (await table.snapshot()).files;
    for (let i = 0; i < 3; i++) await table.append({ rows: plain(3000 + i, 3001 + i) });
    const compacted = await table.compact({ targetFileBytes: 1 << 30, smallFileBytes: big.size });
    expect({ removed: compacted.filesRemoved, added: compacted.filesAdded }).toEqual({ removed: 3, added: 1 });
    expect((await table.snapshot()).files.map((f) => f.path)).toContain(big.path);
    expect(await count(table)).toBe(3003);
    // Without the bound every file under the target is packed.
    await table.append({ rows: plain(4000, 4001) });
    expect((await table.compact({ targetFileBytes: 1 << 30 })).filesRemoved).toBe(3);
    expect(await count(table)).toBe(3004);
  });

  it('time travel by version and by N.json mtime; schema evolution reads old files as null', async () => {
    const root = path.join(dir, 'tt');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 5) });
    await table.append({ rows: rows(5, 9) });
    const logDir = path.join(root, '_delta_log');
    // Pin mtimes: v0 at t0, v1 at t0+10s, v2 at t0+5s (non-monotonic: forced to v1 + 1 ms).
    const t0 = Date.UTC(2026, 0, 1) / 1000;
    await fs.utimes(path.join(logDir, '00000000000000000000.json'), t0, t0);
    await fs.utimes(path.join(logDir, '00000000000000000001.json'), t0 + 10, t0 + 10);
    await fs.utimes(path.join(logDir, '00000000000000000002.json'), t0 + 5, t0 + 5);
    expect((await table.snapshot({ timestampMs: t0 * 1000 + 9000 })).version).toBe(0);
    expect((await table.snapshot({ timestampMs: t0 * 1000 + 10_000 })).version).toBe(1);
    expect((await table.snapshot({ timestampMs: t0 * 1000 + 10_001 })).version).toBe(2);
    await expect(table.snapshot({ timestampMs: t0 * 1000 - 1 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
    expect(await count(table, 1)).toBe(5);
    await expect(table.snapshot({ version: 7 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });

    await table.addColumns([{ name: 'note', type: 'string' }, { name: 'score', type: 'double' }]);
    await expect(table.addColumns([{ name: 'NOTE', type: 'string' }])).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await expect(table.addColumns([{ name: 'req', type: 'string', nullable: false }])).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await table.append({ rows: [{ key: 100, v: 1, payload: 'x', bucket: 0, note: 'hello', score: 1.5 }] });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      const got = await session.queryJson('SELECT key, note, score FROM t WHERE key IN (0, 100) ORDER BY key');
      expect(got).toEqual([{ key: '0', note: null, score: null }, { key: '100', note: 'hello', score: 1.5 }]);
    } finally {
      session.close();
    }
    // Compaction of a partition mixing old and new files keeps the new column, and its output's
    // null counts (from its own footer) show every column, old files' rows included.
    await table.compact({ partition: { bucket: '0' } });
    const compactedFile = (await table.snapshot()).files.find((f) => f.partitionValues.bucket === '0')!;
    expect(JSON.parse(compactedFile.add.stats!).nullCount).toEqual({ key: 0, v: 0, payload: 0, note: 3, score: 3 });
    const probe = await deltaProbe('read', root);
    expect(probe.columns).toEqual(['key', 'v', 'payload', 'bucket', 'note', 'score']);
    expect(probe.rows.find((r: { key: number }) => r.key === 100)).toMatchObject({ note: 'hello', score: 1.5 });
    expect(probe.rows.find((r: { key: number }) => r.key === 0)).toMatchObject({ note: null });
    const history = await deltaProbe('history', root);
    expect(history[0].operation).toBe('OPTIMIZE');
  });

  it('relationSql: one table\'s rows at a snapshot (only the files kept) are another table\'s MERGE source, inside DuckDB', async () => {
    const source = await LakeTable.create(new LocalStorage(path.join(dir, 'rel-src')), { columns, partitionColumns: ['bucket'] });
    await source.append({ rows: rows(0, 6, 2) });
    const before = await source.snapshot();
    await source.addColumns([{ name: 'note', type: 'string' }]);
    await source.append({ rows: [{ key: 7, v: 1, payload: 'late', bucket: 1, note: 'n' }] });
    const target = await LakeTable.create(new LocalStorage(path.join(dir, 'rel-dst')), { columns, partitionColumns: ['bucket'] });
    await target.append({ rows: rows(0, 6, 1) });

    // Only bucket 0's files of the latest snapshot (old files lack `note`: it reads as null).
    const snap = await source.snapshot();
    const sql = await source.relationSql(snap, (f) => f.partitionValues.bucket === '0');
    const merged = await target.merge({ source: { sql }, keys: ['key'], versionColumn: 'v' });
    expect(merged).toMatchObject({ rowsUpdated: 2, rowsInserted: 0 });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: target.storage, snapshot: await target.snapshot() } });
    try {
      const got = await session.queryJson('SELECT key, v FROM t ORDER BY key');
      expect(got.map((r) => [Number(r.key), Number(r.v)])).toEqual([[0, 2], [1, 1], [2, 1], [3, 2], [4, 1], [5, 1]]);
    } finally {
      session.close();
    }
    // An older snapshot is a source too: its schema has no `note`.
    expect(await source.relationSql(before)).not.toContain('note');
    expect(await source.relationSql(snap)).toContain('note');
  });

  it('a relation over files of several partitions (one of them null) gives each row its own partition value, and a new column as null in old files', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'rel-parts')), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: [...rows(0, 6), { key: 100, v: 1, payload: 'nobucket', bucket: null }] });
    await table.addColumns([{ name: 'note', type: 'string' }]);
    await table.append({ rows: [{ key: 7, v: 1, payload: 'late', bucket: 1, note: 'n' }] });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      const got = await session.queryJson('SELECT key, bucket, note FROM t ORDER BY key');
      expect(got.map((r) => [Number(r.key), r.bucket === null ? null : Number(r.bucket), r.note])).toEqual([
        [0, 0, null], [1, 1, null], [2, 2, null], [3, 0, null], [4, 1, null], [5, 2, null], [7, 1, 'n'], [100, null, null],
      ]);
      // The partition column filters as a column (DuckDB evaluates the per-file value).
      expect(Number((await session.queryJson('SELECT count(*) AS n FROM t WHERE bucket = 1'))[0].n)).toBe(3);
    } finally {
      session.close();
    }
    // Files whose stats show every column are one plain scan; the older files, which lack `note`,
    // a second one with union_by_name. Once compaction has rewritten every partition (a file
    // of each with `note`, then one file per partition), every file holds `note`: one plain scan.
    const scans = (sql: string) => ({ all: sql.match(/read_parquet\(/g)?.length ?? 0, byName: sql.match(/union_by_name=true/g)?.length ?? 0 });
    expect(scans(await table.relationSql(await table.snapshot()))).toEqual({ all: 2, byName: 1 });
    await table.append({ rows: [0, 2, null].map((bucket, i) => ({ key: 200 + i, v: 1, payload: 'later', bucket, note: null })) });
    await table.compact();
    expect(scans(await table.relationSql(await table.snapshot()))).toEqual({ all: 1, byName: 0 });
    const again = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      expect(await again.queryJson('SELECT key, bucket, note FROM t WHERE key IN (0, 7, 100) ORDER BY key')).toEqual([
        { key: '0', bucket: 0, note: null },
        { key: '7', bucket: 1, note: 'n' },
        { key: '100', bucket: null, note: null },
      ]);
    } finally {
      again.close();
    }
  });

  it('amortised merge: pending tail folds by threshold; current view is exact; delta-rs sees the folded state', async () => {
    const root = path.join(dir, 'amortised');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 300) }); // 100 per bucket
    const spec = { keys: ['key'], versionColumn: 'v', deleteColumn: 'op', amortise: { foldFraction: 0.5 } } as const;
    // 30 changes (10 per bucket): below 50% of 100, nothing folds; txn lands anyway.
    const r1 = await table.merge({ ...spec, source: { rows: rows(0, 30, 2).map((r) => ({ ...r, op: 'upsert' })) }, txns: [{ appId: 'a', version: 1 }] });
    expect(r1.foldedPartitions).toBe(0);
    expect(r1.pendingRows).toBe(30);
    expect((await table.snapshot()).txnVersion('a')).toBe(1n);
    // Deletes and inserts, still pending.
    await table.merge({ ...spec, source: { rows: [{ key: 1, v: 3, payload: null, bucket: 1, op: 'delete' }, { key: 5000, v: 1, payload: 'new', bucket: 2, op: 'upsert' }, { key: 2, v: 1, payload: 'stale', bucket: 2, op: 'upsert' }] } });
    const expectCurrent = async () => {
      const engine = await LakeQueryEngine.create();
      const session = await engine.open({ t: await table.currentView() });
      try {
        const all = await session.queryJson('SELECT key, v, payload FROM t ORDER BY key');
        expect(all.length).toBe(300); // 300 - 1 deleted + 1 inserted
        const byKey = new Map(all.map((r) => [Number(r.key), r]));
        expect(byKey.has(1)).toBe(false);
        expect(byKey.get(0)).toMatchObject({ v: '2', payload: 'p0-2' });
        expect(byKey.get(2)).toMatchObject({ v: '2', payload: 'p2-2' });
        expect(byKey.get(5000)).toMatchObject({ payload: 'new' });
        expect(byKey.get(100)).toMatchObject({ v: '1' });
      } finally {
        session.close();
      }
    };
    await expectCurrent();
    // A caller that crashed before learning the outcome re-sends the batch: no change.
    await table.merge({ ...spec, source: { rows: rows(0, 30, 2).map((r) => ({ ...r, op: 'upsert' })) } });
    await expectCurrent();
    // Silver itself (what Delta readers see) is still as of its last fold.
    expect((await deltaProbe('read', root)).rows.find((r: { key: number }) => r.key === 0).v).toBe(1);
    // A tighter cap folds the partitions with the highest pending share until the tail fits.
    const partial = await table.merge({ ...spec, source: { rows: [] }, amortise: { foldFraction: 0.1 } });
    expect(partial.foldedPartitions).toBeGreaterThanOrEqual(1);
    expect(partial.foldedPartitions).toBeLessThan(3);
    expect(partial.pendingRows).toBeLessThanOrEqual(30);
    await expectCurrent();
    const folded = await table.merge({ ...spec, source: { rows: [] }, amortise: { foldAll: true } });
    expect(folded.foldedPartitions! + partial.foldedPartitions!).toBe(3);
    expect(folded.pendingRows).toBe(0);
    await expectCurrent();
    const probe = await deltaProbe('read', root);
    expect(probe.rows.length).toBe(300);
    const byKey = new Map(probe.rows.map((r: { key: number }) => [r.key, r]));
    expect(byKey.has(1)).toBe(false);
    expect(byKey.get(0)).toMatchObject({ v: 2 });
    expect((await table.currentView()).pending).toBeUndefined();
  });

  // Another Delta writer may set a retention this library cannot read ('interval 1 fortnight'):
  // every call of a handle after its first load failed (each later load drops expired tombstones
  // by that retention), and so did every checkpoint. Vacuum must still refuse to guess.
  it('a file retention another writer set in an unreadable form: reads, writes and checkpoints go on, vacuum refuses', async () => {
    const root = path.join(dir, 'odd-retention');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 3) });
    // Version 2: the other writer's metaData, its configuration changed.
    const zero = (await fs.readFile(commitFile(root, 0), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const metaData = zero.find((a) => a.metaData).metaData;
    const changed = { ...metaData, configuration: { ...metaData.configuration, 'delta.deletedFileRetentionDuration': 'interval 1 fortnight', 'delta.logRetentionDuration': 'interval 1 fortnight' } };
    await fs.writeFile(commitFile(root, 2), [{ commitInfo: { timestamp: Date.now(), operation: 'SET TBLPROPERTIES' } }, { metaData: changed }].map((a) => JSON.stringify(a)).join('\n') + '\n');
    expect((await table.snapshot()).version).toBe(2);
    expect((await table.snapshot()).version).toBe(2); // the second load is the one that failed
    for (let i = 0; i < 8; i++) await table.append({ rows: rows(10 + i, 11 + i) });
    expect(await fs.readdir(path.join(root, '_delta_log'))).toContain('00000000000000000010.checkpoint.parquet');
    expect(await count(table)).toBe(11);
    await expect(table.vacuum()).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    expect(await table.cleanupLog({ nowMs: Date.now() + 365 * 86_400_000 })).toEqual({ filesDeleted: 0 });
  });

  // Tombstones were dropped at the table's retention (7 days) while the caller's vacuum kept 14:
  // a file removed 8 days ago, written 20 days ago, was then judged by its mtime and deleted
  // inside the vacuum's window (time travel to before the compaction failed).
  it.each([
    [undefined, 'refused'],
    [14 * 86_400_000, 0],
  ])('a handle keeping tombstones %s ms: vacuum with a longer retention than the table deletes %s files removed inside its window', async (keepTombstonesMs, deleted) => {
    const DAY = 86_400_000;
    const root = path.join(dir, `keep-tombstones-${keepTombstonesMs ?? 'table'}`);
    const table = await LakeTable.create(new LocalStorage(root), { columns }, { keepTombstonesMs });
    await table.append({ rows: rows(0, 2) });
    await table.append({ rows: rows(2, 4) });
    const written = (await table.snapshot()).files.map((f) => f.key);
    const old = new Date(Date.now() - 20 * DAY);
    for (const key of written) await fs.utimes(path.join(root, key), old, old);
    await table.compact({ targetFileBytes: 64 * 1024 * 1024 });
    const eightDaysLater = Date.now() + 8 * DAY;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => eightDaysLater);
    try {
      await table.append({ rows: rows(4, 5) });
      const vacuum = table.vacuum({ retentionMs: 14 * DAY, nowMs: eightDaysLater, dryRun: true });
      if (deleted === 'refused') {
        // It deleted the 2 compacted-away files, removed 8 days ago, once a checkpoint had dropped their tombstones.
        await expect(vacuum).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { retentionMs: 14 * DAY, tombstoneRetentionMs: 7 * DAY } });
        return;
      }
      const r = await vacuum;
      expect(r.filesDeleted.filter((k) => written.includes(k))).toHaveLength(deleted as number);
    } finally {
      clock.mockRestore();
    }
  });

  it('a table keeping removed files 14 days vacuums its amortised-merge tail by the same retention', async () => {
    const root = path.join(dir, 'fortnight-tail');
    const table = await LakeTable.create(new LocalStorage(root), { columns, properties: { 'delta.deletedFileRetentionDuration': 'interval 14 days' } });
    await table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: rows(0, 4) }, amortise: { foldFraction: 10 } });
    await table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: rows(4, 5) }, amortise: { foldFraction: 10 } });
    expect((await fs.readdir(path.join(root, '_sluice_tail', '_delta_log'))).length).toBeGreaterThan(0);
    // The tail has no retention property: it kept tombstones 7 days, under the 14 asked, and was refused.
    await expect(table.vacuum({ dryRun: true })).resolves.toMatchObject({ filesDeleted: [] });
  });

  // The tail is vacuumed through a prefixed view: an excluded prefix passed through it unprefixed
  // left every tail key out, and the tail's orphans and removed files were never deleted.
  it('vacuum deletes orphans of the table and of its tail, and no log file of either', async () => {
    const root = path.join(dir, 'tail-orphans');
    const table = await LakeTable.create(new LocalStorage(root), { columns });
    await table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: rows(0, 4) }, amortise: { foldFraction: 10 } });
    await table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: rows(4, 5) }, amortise: { foldFraction: 10 } });
    await fs.writeFile(path.join(root, 'part-orphan.parquet'), 'left by a crash');
    await fs.writeFile(path.join(root, '_sluice_tail', 'part-orphan.parquet'), 'left by a crash');
    const logs = async () => [...(await fs.readdir(path.join(root, '_delta_log'))), ...(await fs.readdir(path.join(root, '_sluice_tail', '_delta_log')))].sort();
    const before = await logs();
    const rowsBefore = await count(table);
    const tailFiles = async () => (await table.currentView()).pending?.snapshot.files ?? [];
    const tailFilesBefore = (await tailFiles()).length;
    const r = await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000 });
    expect(r.filesDeleted).toEqual(expect.arrayContaining(['part-orphan.parquet', '_sluice_tail/part-orphan.parquet']));
    expect(r.filesDeleted.every((k) => !k.includes('_delta_log'))).toBe(true);
    expect(await logs()).toEqual(before);
    expect(await count(table)).toBe(rowsBefore);
    expect(tailFilesBefore).toBeGreaterThan(0);
    for (const f of await tailFiles()) await expect(fs.access(path.join(root, '_sluice_tail', f.key))).resolves.toBeUndefined();
  });

  // Hive escaping leaves `}` as it is (as Spark does), and the reader refused any path with a
  // brace as a glob: the partition was written, then never read, merged or compacted again.
  it('a partition value with braces is read, merged and compacted', async () => {
    const braces = [{ name: 'key', type: 'long' as const }, { name: 'v', type: 'long' as const }, { name: 'region', type: 'string' as const }];
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'braces')), { columns: braces, partitionColumns: ['region'] });
    await table.append({ rows: [{ key: 1, v: 1, region: 'a}b' }, { key: 2, v: 1, region: '{x}' }] });
    await table.append({ rows: [{ key: 3, v: 1, region: 'a}b' }] });
    await table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: [{ key: 1, v: 2, region: 'a}b' }] } });
    expect((await table.compact({ targetFileBytes: 64 * 1024 * 1024 })).filesAdded).toBeGreaterThan(0);
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      expect(await session.queryJson('SELECT key, v, region FROM t ORDER BY key')).toEqual([
        { key: '1', v: '2', region: 'a}b' },
        { key: '2', v: '1', region: '{x}' },
        { key: '3', v: '1', region: 'a}b' },
      ]);
    } finally {
      session.close();
    }
  });

  it('an amortised tail that folds every step is checkpointed at every interval, its fold commits too', async () => {
    const root = path.join(dir, 'tail-checkpoints');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    const spec = { keys: ['key'], versionColumn: 'v', amortise: { foldFraction: 0.1 } } as const;
    // Each step's rows are far over 10 % of the table: every step appends to the tail, then folds it.
    for (let step = 0; step < 12; step++) await table.merge({ ...spec, source: { rows: rows(step * 100, step * 100 + 60) } });
    const log = await fs.readdir(path.join(root, '_sluice_tail', '_delta_log'));
    const commits = log.filter((f) => f.endsWith('.json')).length;
    expect(commits).toBeGreaterThanOrEqual(24); // create + 12 appends + 12 fold deletes
    const checkpoints = log.filter((f) => f.endsWith('.checkpoint.parquet')).sort();
    expect(checkpoints).toEqual(['00000000000000000010.checkpoint.parquet', '00000000000000000020.checkpoint.parquet']);
  });

  // A fold whose tail DELETE fails after the table's commit leaves the folded rows in the tail:
  // the tombstone has to stay there with its key's older pending version, or the current view
  // shows that version and the next fold writes it back (a tombstone folded past the tail did).
  it('a delete of a key pending in the tail stays deleted when the tail DELETE after its fold fails', async () => {
    const storage = new FailFirstTailDelete(path.join(dir, 'tail-delete-fails'));
    const table = await LakeTable.create(storage, { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 100) });
    const spec = { keys: ['key'], versionColumn: 'v', deleteColumn: 'op' } as const;
    await table.merge({ ...spec, source: { rows: [{ key: 1000, v: 1, payload: 'pending', bucket: 1, op: 'upsert' }] }, amortise: { foldFraction: 0.1 } });
    expect(await viewRows(table, 'SELECT v FROM t WHERE key = 1000')).toHaveLength(1);
    await expect(
      table.merge({ ...spec, source: { rows: [{ key: 1000, v: 2, payload: null, bucket: 1, op: 'delete' }] }, amortise: { foldAll: true } }),
    ).rejects.toThrow(/injected failure/);
    expect(storage.failed).toBe(1);
    expect(await viewRows(table, 'SELECT v FROM t WHERE key = 1000')).toEqual([]);
    // The next fold (maintenance) goes through the tail left behind.
    await table.merge({ ...spec, source: { rows: [] }, amortise: { foldAll: true } });
    expect(await viewRows(table, 'SELECT v FROM t WHERE key = 1000')).toEqual([]);
    expect(await count(table)).toBe(100);
  });

  // A writer that stops amortising (SLUICE_SILVER_FOLD_PERCENT=0 after a restart) merged by copy
  // on write and left the tail's rows pending for good: a delete of a pending entity removed its
  // folded row, and the current view brought the pending version back.
  it('a merge without amortise folds the rows an earlier amortised merge left pending', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'stop-amortising')), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 30) });
    const spec = { keys: ['key'], versionColumn: 'v', deleteColumn: 'op' } as const;
    const pending = await table.merge({ ...spec, source: { rows: [{ key: 7, v: 2, payload: 'pending', bucket: 1, op: 'upsert' }, { key: 8, v: 2, payload: 'kept', bucket: 2, op: 'upsert' }] }, amortise: { foldFraction: 0.9 } });
    expect(pending.pendingRows).toBe(2);
    const plain = await table.merge({ ...spec, source: { rows: [{ key: 7, v: 3, payload: null, bucket: 1, op: 'delete' }] }, txns: [{ appId: 'fold', version: 4 }] });
    expect(plain.version).toBeDefined();
    expect((await table.currentView()).pending).toBeUndefined();
    const snap = await table.snapshot();
    expect(snap.txnVersion('fold')).toBe(4n);
    // What Delta readers see is the current state: key 7 deleted, key 8 at its pending version.
    const probe = await deltaProbe('read', path.join(dir, 'stop-amortising'));
    const byKey = new Map(probe.rows.map((r: { key: number }) => [r.key, r]));
    expect(probe.rows).toHaveLength(29);
    expect(byKey.has(7)).toBe(false);
    expect(byKey.get(8)).toMatchObject({ v: 2, payload: 'kept' });
  });

  // Silver gains a new column before the fold that adds it to the tail: the current view read the
  // column from the tail's rows and failed (a binder error, every query of the table) until then.
  it('a column the table gained before its tail did reads as null from the tail\'s rows', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'evolve-tail')), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 30) });
    const spec = { keys: ['key'], versionColumn: 'v', deleteColumn: 'op', amortise: { foldFraction: 0.9 } } as const;
    await table.merge({ ...spec, source: { rows: [{ key: 4, v: 2, payload: 'pending', bucket: 1, op: 'upsert' }, { key: 5, v: 2, payload: null, bucket: 2, op: 'delete' }] } });
    await table.addColumns([{ name: 'coupon', type: 'string' }]);
    const view = await table.currentView();
    expect(view.pending).toBeDefined();
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: view });
    try {
      const all = await session.queryJson('SELECT key, v, payload, coupon FROM t ORDER BY key');
      expect(all).toHaveLength(29);
      expect(all.find((r) => r.key === '4')).toEqual({ key: '4', v: '2', payload: 'pending', coupon: null });
      expect(all.some((r) => r.key === '5')).toBe(false);
    } finally {
      session.close();
    }
  });
});

describe('sluice.parquet.rowGroupRows', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-rowgroups');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Per data file, its row groups' [min, max] of `key` in file order. */
  async function keyRanges(table: LakeTable): Promise<[number, number][][]> {
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({});
    try {
      const snap = await table.snapshot();
      const out: [number, number][][] = [];
      for (const f of snap.files) {
        const file = path.join(dir, 't', f.key).replace(/'/g, "''");
        const groups = await session.query(`SELECT stats_min, stats_max FROM parquet_metadata('${file}') WHERE path_in_schema = 'key' ORDER BY row_group_id`);
        out.push(groups.map((g) => [Number(g.stats_min), Number(g.stats_max)]));
      }
      return out;
    } finally {
      session.close();
    }
  }

  it('refuses values DuckDB cannot write as whole vectors', async () => {
    for (const bad of ['0', '1000', '-2048', '4096.5', 'x']) {
      await expect(LakeTable.create(new LocalStorage(path.join(dir, `bad-${bad}`)), { columns, properties: { 'sluice.parquet.rowGroupRows': bad } })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    }
  });

  it('MERGE rewrites and compaction write row groups of that size, in cluster order, so each group spans a narrow key range', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 't')), { columns, partitionColumns: ['bucket'], properties: { 'sluice.parquet.rowGroupRows': '2048' } });
    // keys inserted in a scrambled order: without the ordered write every group would span them all
    const scrambled = (n: number) => Array.from({ length: n }, (_, i) => (i * 7919) % n);
    const upserts = scrambled(30_000).map((key) => ({ key, v: 1, payload: `p${key}`, bucket: key % 3, op: 'upsert' }));
    await table.merge({ source: { rows: upserts }, keys: ['key'], versionColumn: 'v', deleteColumn: 'op', clusterColumn: 'key' });
    const afterMerge = await keyRanges(table);
    expect(afterMerge).toHaveLength(3); // one file per bucket, 10k rows each
    for (const groups of afterMerge) {
      expect(groups.length).toBeGreaterThanOrEqual(5); // 10,000 rows / 2,048
      // a group of 2,048 of a bucket's keys (every third key) spans about 3 × 2,048
      for (const [lo, hi] of groups) expect(hi - lo).toBeLessThan(3 * 2048 * 1.5);
    }
    await table.compact({ sortBy: ['key'], targetFileBytes: 1 << 30 });
    const afterCompaction = await keyRanges(table);
    for (const groups of afterCompaction) {
      expect(groups.length).toBeGreaterThanOrEqual(5);
      for (const [lo, hi] of groups) expect(hi - lo).toBeLessThan(3 * 2048 * 1.5);
    }
    expect(await count(table)).toBe(30_000);
  });

  it('a row order of a truncated time, then a column: compaction writes it exactly, a MERGE run by run; bad orders are refused', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'timed')), {
      columns: [...columns, { name: 't', type: 'timestamp' }],
      partitionColumns: ['bucket'],
      properties: { 'sluice.parquet.rowGroupRows': '2048' },
    });
    const DAY = 86_400_000;
    const t0 = Date.UTC(2026, 0, 1);
    // keys in a scrambled order, each on one of four days: only the ordered write groups them
    const batch = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => {
        const key = from + ((i * 7919) % n);
        return { key, v: 1, payload: `p${key}`, bucket: key % 3, op: 'upsert', t: new Date(t0 + ((key * 31) % 4) * DAY + (key % 977) * 1000) };
      });
    const order = [{ column: 't', truncate: 'day' as const }, 'key'];
    const spec = { keys: ['key'], versionColumn: 'v', deleteColumn: 'op', clusterColumn: 'key', rowOrder: order };
    await table.merge({ ...spec, source: { rows: batch(0, 24_000) } });
    await table.merge({ ...spec, source: { rows: batch(24_000, 12_000) } });
    for (const file of await fileRows(table)) {
      // A MERGE's partitioned COPY keeps the order run by run (its threads interleave sorted
      // runs): the day changes a few times along a file, where in arrival order it would change
      // at most rows.
      const changes = file.filter((r, i) => i > 0 && r.day !== file[i - 1].day).length;
      expect(changes).toBeLessThanOrEqual(12);
    }
    const compacted = await table.compact({ sortBy: order, targetFileBytes: 1 << 30 });
    expect(compacted.filesRemoved).toBe(6);
    const files = await fileRows(table);
    expect(files).toHaveLength(3);
    for (const file of files) {
      for (let i = 1; i < file.length; i++) {
        const [a, b] = [file[i - 1], file[i]];
        expect(a.day < b.day || (a.day === b.day && a.key < b.key)).toBe(true);
      }
    }
    expect(await count(table)).toBe(36_000);

    await expect(table.compact({ sortBy: [{ column: 'key', truncate: 'day' }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    await expect(table.compact({ sortBy: ['no_such_column'] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
  });

  /** Per data file, its rows' (day of t, key) in file order. */
  async function fileRows(table: LakeTable): Promise<{ day: number; key: number }[][]> {
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({});
    try {
      const out: { day: number; key: number }[][] = [];
      for (const f of (await table.snapshot()).files) {
        const file = path.join(dir, 'timed', f.key).replace(/'/g, "''");
        const rows = await session.query(`SELECT floor(epoch_ms(t) / 86400000)::BIGINT AS day, key FROM read_parquet('${file}', file_row_number = true) ORDER BY file_row_number`);
        out.push(rows.map((r) => ({ day: Number(r.day), key: Number(r.key) })));
      }
      return out;
    } finally {
      session.close();
    }
  }
});
