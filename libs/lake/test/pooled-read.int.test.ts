import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage } from '../src';
import { tempDir } from './helpers';

// LakeQueryEngine.read: a statement kept on a pooled connection, keyed by its SQL text, which
// names every file read. These tests pin what must not change when a statement is re-used.
describe('LakeQueryEngine.read (pooled, prepared)', () => {
  let dir: string;
  let root: string;
  let table: LakeTable;
  let engine: LakeQueryEngine;
  const columns = [
    { name: 'key', type: 'long' as const },
    { name: 'v', type: 'long' as const },
    { name: 'op', type: 'string' as const },
    { name: 'bucket', type: 'integer' as const },
  ];
  const rows = (from: number, to: number, v: number) => Array.from({ length: to - from }, (_, i) => ({ key: from + i, v, op: 'upsert', bucket: (from + i) % 2 }));

  beforeAll(async () => {
    dir = await tempDir('lake-read');
    root = path.join(dir, 't');
    table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 10, 1) });
    engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 });
  });
  afterAll(async () => {
    engine.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const view = async (files?: (f: { partitionValues: Record<string, string | null> }) => boolean) => ({ t: { storage: table.storage, snapshot: await table.snapshot(), files } });

  it('answers like a session, and again with new parameters on the same statement', async () => {
    const sql = 'SELECT key, v, bucket FROM t WHERE key >= $1 ORDER BY key';
    const session = await engine.open(await view());
    try {
      expect(await engine.read(await view(), sql, [7])).toEqual(await session.queryJson(sql, [7]));
    } finally {
      session.close();
    }
    // Sequential calls come back on the same pooled connection, so these re-use one statement.
    for (const from of [0, 5, 9, 10]) {
      expect((await engine.read(await view(), sql, [from])).map((r) => Number(r.key))).toEqual(Array.from({ length: 10 - from }, (_, i) => from + i));
    }
    // Named parameters and the caller's own WITH (merged after the view's CTE).
    expect(await engine.read(await view(), 'WITH big AS (SELECT key FROM t WHERE key > $min) SELECT count(*) AS n FROM big', { min: 4 })).toEqual([{ n: '5' }]);
  });

  it('a new commit is new SQL text: the next read sees it, the old snapshot still reads its own files', async () => {
    const before = await view();
    const count = 'SELECT count(*) AS n, max(v) AS v FROM t';
    expect(await engine.read(before, count)).toEqual([{ n: '10', v: '1' }]);
    await table.append({ rows: rows(10, 12, 2) });
    expect(await engine.read(await view(), count)).toEqual([{ n: '12', v: '2' }]);
    expect(await engine.read(before, count)).toEqual([{ n: '10', v: '1' }]);
    // A file filter is part of the view, so one bucket is its own statement.
    expect(await engine.read(await view((f) => f.partitionValues.bucket === '1'), count)).toEqual([{ n: '6', v: '2' }]);
  });

  it('a column named __proto__ (Delta allows it) is a column of every row, not the row\'s prototype', async () => {
    const odd = await LakeTable.create(new LocalStorage(path.join(dir, 'proto')), { columns: [{ name: 'key', type: 'long' }, { name: '__proto__', type: 'string' }] });
    await odd.append({ rows: [Object.fromEntries([['key', 1], ['__proto__', 'polluted?']])] });
    const current = { t: { storage: odd.storage, snapshot: await odd.snapshot() } };
    const sql = 'SELECT key, "__proto__" FROM t';
    const rows = await engine.read(current, sql);
    expect(rows).toHaveLength(1);
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
    expect(JSON.stringify(rows)).toBe('[{"key":"1","__proto__":"polluted?"}]');
    const session = await engine.open(current);
    try {
      expect(JSON.stringify(await session.queryJson(sql))).toBe(JSON.stringify(rows));
      expect(Object.keys((await session.query(sql))[0])).toEqual(['key', '__proto__']);
    } finally {
      session.close();
    }
  });

  it('concurrent reads each get a connection and the right answer', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, async (_, i) => engine.read(await view(), 'SELECT count(*) AS n FROM t WHERE key < $1', [i])));
    expect(answers.map((a) => Number(a[0].n))).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  it('the current view of an amortised merge (table ⊕ tail) reads the same through read() as through a session', async () => {
    const root2 = path.join(dir, 'amortised');
    const merged = await LakeTable.create(new LocalStorage(root2), { columns, partitionColumns: ['bucket'] });
    await merged.append({ rows: rows(0, 100, 1) });
    await merged.merge({
      keys: ['key'],
      versionColumn: 'v',
      deleteColumn: 'op',
      amortise: { foldFraction: 0.9 },
      source: { rows: [...rows(0, 5, 2), { key: 7, v: 3, op: 'delete', bucket: 1 }, { key: 500, v: 1, op: 'upsert', bucket: 0 }] },
    });
    const current = await merged.currentView();
    expect(current.pending).toBeDefined();
    const sql = 'SELECT key, v FROM t ORDER BY key';
    const session = await engine.open({ t: current });
    try {
      const viaSession = await session.queryJson(sql);
      expect(await engine.read({ t: current }, sql)).toEqual(viaSession);
      expect(viaSession.length).toBe(100); // 100 - 1 deleted + 1 inserted
    } finally {
      session.close();
    }
  });

  it('refuses anything but SELECT on a locked engine, and the pooled connection stays usable', async () => {
    await expect(engine.read(await view(), `COPY (SELECT 1) TO '${path.join(root, 'evil.csv')}'`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
    await expect(engine.read(await view(), `SELECT * FROM read_csv('/etc/passwd')`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
    await expect(fs.access(path.join(root, 'evil.csv'))).rejects.toThrow();
    expect(await engine.read(await view(), 'SELECT count(*) AS n FROM t')).toEqual([{ n: '12' }]);
  });

  it('interrupts at the timeout; the connection goes back to the pool and answers the next read', async () => {
    const slow = 'SELECT count(*) AS n FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = $1';
    await expect(engine.read(await view(), slow, [-1], { timeoutMs: 150 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT' });
    await expect(engine.read(await view(), slow, [-1], { timeoutMs: 150 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT' });
    expect(await engine.read(await view(), 'SELECT sum(key) AS s FROM t', undefined, { timeoutMs: 10_000 })).toEqual([{ s: String((11 * 12) / 2) }]);
  });

  // DuckDB forgets an interrupt that lands while a statement is still being prepared: the query
  // then ran to its end (seconds here) and answered as if in time.
  it('interrupts a statement whose timeout passed while it was being prepared', async () => {
    const longList = Array.from({ length: 100_000 }, (_, i) => -1 - i).join(',');
    const slowToPrepare = `SELECT count(*) AS n FROM range(400000000) r(x) WHERE x % 7 = $1 AND x NOT IN (${longList})`;
    const started = performance.now();
    await expect(engine.read(await view(), slowToPrepare, [3], { timeoutMs: 50 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT' });
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(await engine.read(await view(), 'SELECT count(*) AS n FROM t', undefined, { timeoutMs: 10_000 })).toEqual([{ n: '12' }]);
  });

  it('a data file gone after the statement was prepared is LAKE_DATA_FILE_MISSING, and stays so (not a stale answer)', async () => {
    const root3 = path.join(dir, 'vanishing');
    const t3 = await LakeTable.create(new LocalStorage(root3), { columns, partitionColumns: ['bucket'] });
    await t3.append({ rows: rows(0, 4, 1) });
    const views = { t: { storage: t3.storage, snapshot: await t3.snapshot() } };
    expect(await engine.read(views, 'SELECT count(*) AS n FROM t')).toEqual([{ n: '4' }]);
    const victim = views.t.snapshot.files[0];
    await fs.rm(path.join(root3, victim.path));
    await expect(engine.read(views, 'SELECT count(*) AS n FROM t')).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
    await expect(engine.read(views, 'SELECT count(*) AS n FROM t')).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
  });

  it('close releases the engine: later reads and sessions are refused, a session opened before still answers', async () => {
    const own = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 });
    const count = 'SELECT count(*) AS n FROM t';
    const expected = await own.read(await view(), count);
    const session = await own.open(await view());
    own.close();
    own.close();
    await expect(own.read(await view(), count)).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', message: expect.stringContaining('closed') });
    await expect(own.open(await view())).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    try {
      expect(await session.queryJson(count)).toEqual(expected);
    } finally {
      session.close();
    }
  });

  it("a locked engine takes DuckDB's external file cache setting (default DuckDB's: on)", async () => {
    const setting = async (e: LakeQueryEngine) => (await e.read({}, "SELECT current_setting('enable_external_file_cache') AS on"))[0].on;
    const off = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1, externalFileCache: false });
    try {
      expect(await setting(off)).toBe(false);
      expect(await setting(engine)).toBe(true);
    } finally {
      off.close();
    }
  });
});
