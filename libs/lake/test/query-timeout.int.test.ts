import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage, type LakeSession } from '../src';
import { tempDir } from './helpers';

// ~10^12 joined rows: far beyond any timeout used here, so only the interrupt can end it.
const SLOW = 'SELECT count(*) AS n FROM range(1000000) a, range(1000000) b WHERE a.range + b.range = $x';

describe('LakeSession query timeout', () => {
  let dir: string;
  let table: LakeTable;
  beforeAll(async () => {
    dir = await tempDir('lake-timeout');
    table = await LakeTable.create(new LocalStorage(path.join(dir, 't')), { columns: [{ name: 'k', type: 'long' }] });
    await table.append({ rows: [{ k: 1 }, { k: 2 }] });
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function withSession<T>(engine: LakeQueryEngine, fn: (s: LakeSession) => Promise<T>): Promise<T> {
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      return await fn(session);
    } finally {
      session.close();
    }
  }

  it.each([
    ['shared', () => LakeQueryEngine.create()],
    ['locked', () => LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 })],
  ])('a slow cross join is interrupted within a bound (%s engine) and the session stays usable', async (_label, make) => {
    const engine = await make();
    await withSession(engine, async (s) => {
      const started = performance.now();
      await expect(s.query(SLOW, { x: -1 }, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT', retryable: true, details: { timeoutMs: 200 } });
      const elapsed = performance.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(5000); // 2 shared cores under load: generous, but far below the query's own runtime
      await expect(s.queryJson(SLOW, { x: -1 }, { timeoutMs: 150 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT' });
      // The interrupt does not leak into the next query on the same connection.
      expect(await s.queryJson('SELECT sum(k) AS s FROM t', undefined, { timeoutMs: 10_000 })).toEqual([{ s: '3' }]);
      expect(await s.query('SELECT count(*) AS n FROM t')).toEqual([{ n: 2n }]);
    });
  });

  it('running out of DuckDB memory is LAKE_OUT_OF_MEMORY (retryable), not a failed query', async () => {
    // One list of 2M strings cannot be spilled: it must fit the 16 MB limit, and does not.
    const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1, memoryLimit: '16MB' });
    await withSession(engine, async (s) => {
      await expect(s.query('SELECT length(list(md5(range::VARCHAR))) AS n FROM range(2000000)')).rejects.toMatchObject({ code: 'LAKE_OUT_OF_MEMORY', retryable: true });
      // The session stays usable once the memory is released.
      expect(await s.query('SELECT count(*) AS n FROM t')).toEqual([{ n: 2n }]);
    });
  });

  it('a query that finishes in time returns rows; bad SQL under a timeout is still LAKE_QUERY_FAILED; bad timeouts are refused', async () => {
    const engine = await LakeQueryEngine.create();
    await withSession(engine, async (s) => {
      expect(await s.query('SELECT count(*) AS n FROM range(1000)', undefined, { timeoutMs: 30_000 })).toEqual([{ n: 1000n }]);
      await expect(s.query('SELECT nope FROM t', undefined, { timeoutMs: 30_000 })).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
      for (const timeoutMs of [0, -5, Number.NaN, Infinity]) {
        await expect(s.query('SELECT 1', undefined, { timeoutMs })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
      }
    });
  });

  it('a pooled read counts fetching its files (S3 downloads) within its timeout', async () => {
    // A store whose files take 3 s each to reach the local disk (a slow object store).
    class SlowFetch extends LocalStorage {
      override async localPath(key: string): Promise<string> {
        await new Promise((r) => setTimeout(r, 3000));
        return super.localPath(key);
      }
    }
    const slow = new SlowFetch(path.join(dir, 't'));
    const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 });
    try {
      const snapshot = await table.snapshot();
      const started = performance.now();
      await expect(engine.read({ t: { storage: slow, snapshot } }, 'SELECT count(*) AS n FROM t', undefined, { timeoutMs: 300 })).rejects.toMatchObject({
        code: 'LAKE_QUERY_TIMEOUT',
        retryable: true,
        details: { timeoutMs: 300 },
      });
      expect(performance.now() - started).toBeLessThan(2500);
      // Without a timeout the same read waits for the files and answers.
      expect(await engine.read({ t: { storage: slow, snapshot } }, 'SELECT count(*) AS n FROM t')).toEqual([{ n: '2' }]);
    } finally {
      engine.close();
    }
  });

  describe('a read of 20 files, fetched 8 at a time, 1 s each', () => {
    let many: LakeTable;
    const fetched: string[] = [];
    /** Whether the read's first fetch fails at once. */
    let failFirst = false;
    class SlowFetch extends LocalStorage {
      override async localPath(key: string): Promise<string> {
        fetched.push(key);
        if (failFirst && fetched.length === 1) throw new Error(`fetching ${key} failed`);
        await new Promise((r) => setTimeout(r, 1000));
        return super.localPath(key);
      }
    }
    beforeAll(async () => {
      many = await LakeTable.create(new LocalStorage(path.join(dir, 'many')), { columns: [{ name: 'k', type: 'long' }] });
      for (let k = 0; k < 20; k++) await many.append({ rows: [{ k }] });
    });
    beforeEach(() => {
      fetched.length = 0;
      failFirst = false;
    });

    it('past its deadline starts no further file fetches; those under way finish', async () => {
      const slow = new SlowFetch(path.join(dir, 'many'));
      const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 });
      try {
        const snapshot = await many.snapshot();
        expect(snapshot.files).toHaveLength(20);
        await expect(engine.read({ t: { storage: slow, snapshot } }, 'SELECT count(*) AS n FROM t', undefined, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'LAKE_QUERY_TIMEOUT' });
        // Long enough for the rest to have been fetched, 8 at a time, had the read gone on.
        await new Promise((r) => setTimeout(r, 3000));
        expect(fetched).toHaveLength(8);
        fetched.length = 0;
        expect(await engine.read({ t: { storage: slow, snapshot } }, 'SELECT count(*) AS n FROM t')).toEqual([{ n: '20' }]);
        expect(fetched).toHaveLength(20);
      } finally {
        engine.close();
      }
    });

    it('whose first fetch fails starts no further file fetches either', async () => {
      const slow = new SlowFetch(path.join(dir, 'many'));
      const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], threads: 1 });
      try {
        const snapshot = await many.snapshot();
        failFirst = true;
        await expect(engine.read({ t: { storage: slow, snapshot } }, 'SELECT count(*) AS n FROM t')).rejects.toThrow(/failed/);
        // The other seven fetches under way finish; had the read gone on, the rest would follow.
        await new Promise((r) => setTimeout(r, 3000));
        expect(fetched).toHaveLength(8);
      } finally {
        engine.close();
      }
    });
  });
});

