import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { SluiceError } from '@sluice/errors';
import { LakeQueryEngine, LocalStorage } from '@sluice/lake';
import { LakeAdapter } from '../src/lake/lake-adapter';
import { createOrders, orderRow, tempDir } from './support';

/**
 * Local storage read the way S3 tables are: DuckDB gets a copy from a cache directory. The first
 * time each data file is asked for, its copy is gone before DuckDB opens it, as when the bounded
 * cache evicts a path it has just handed out (LocalFileCache); later calls copy it again.
 */
class EvictingCacheStorage extends LocalStorage {
  readonly evicted = new Set<string>();
  constructor(
    root: string,
    private readonly cacheDir: string,
  ) {
    super(root);
  }
  override async localPath(key: string): Promise<string> {
    const copy = path.join(this.cacheDir, key.replace(/[/\\]/g, '__'));
    // Into place by rename, as LocalFileCache does: a copy made in place truncates the file under
    // a read of the same path (a timed-out read of an earlier case still fetching in the
    // background; DuckDB then saw the file at size 0).
    const tmp = `${copy}.${randomUUID()}.tmp`;
    await fs.copyFile(await super.localPath(key), tmp);
    await fs.rename(tmp, copy);
    if (!this.evicted.has(key)) {
      this.evicted.add(key);
      await fs.rm(copy);
    }
    return copy;
  }
}

describe('query-api over a file cache that evicts a path it handed out', () => {
  let root: string;
  let cacheDir: string;
  let engine: LakeQueryEngine;
  beforeAll(async () => {
    root = await tempDir('eviction');
    cacheDir = path.join(root, 'cache');
    await fs.mkdir(cacheDir);
    const table = await createOrders(root);
    await table.append({ rows: Array.from({ length: 40 }, (_, i) => orderRow(i)) });
    // DuckDB may read the cache only, as query-api's engine over S3 tables does.
    engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [cacheDir], threads: 2 });
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('reads again instead of answering that a live file was vacuumed', async () => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const snapshot = await lake.latest('silver_orders');
    const rows = await lake.query(snapshot, snapshot.files, [], { sql: 'SELECT count(*)::INTEGER AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 });
    expect(rows).toEqual([{ n: 40 }]);
    // Every file was evicted once: the first read really failed and the second one answered.
    expect(storage.evicted.size).toBe(snapshot.files.length);
  });

  it('still answers QUERY_VERSION_UNKNOWN when a file is really gone', async () => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const snapshot = await lake.latest('silver_orders');
    const gone = snapshot.files[0];
    storage.localPath = async (key: string) => path.join(cacheDir, `never-there-${key.replace(/[/\\]/g, '__')}`);
    await expect(lake.query(snapshot, [gone], [], { sql: 'SELECT count(*) AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 })).rejects.toMatchObject({ code: 'QUERY_VERSION_UNKNOWN' });
  });

  // The second try after an evicted file got the whole timeout again: the client had its 504 at
  // the deadline while the read held its slot and budget for up to twice as long.
  it('gives the second try only what is left of the deadline', async () => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const snapshot = await lake.latest('silver_orders');
    const fetch = storage.localPath.bind(storage);
    storage.localPath = async (key: string) => {
      await new Promise((r) => setTimeout(r, 300)); // a slow download, every time
      return fetch(key);
    };
    const started = performance.now();
    await expect(lake.query(snapshot, [snapshot.files[0]], [], { sql: 'SELECT count(*) AS n FROM lake_snapshot', params: [], timeoutMs: 500 })).rejects.toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(performance.now() - started).toBeLessThan(900);
  });

  // On S3 a data file the store does not have fails its download with "no such object"
  // (LAKE_NOT_FOUND), which answered 404 "no commits yet"; a short download (retryable
  // LAKE_STORAGE_TRUNCATED) answered 500.
  it.each([
    ['a file the store does not have', 'QUERY_VERSION_UNKNOWN', new SluiceError('LAKE_NOT_FOUND', 'localPath: no such object')],
    ['a download cut short', 'QUERY_LAKE_UNAVAILABLE', new SluiceError('LAKE_STORAGE_TRUNCATED', 'localPath: 10 of 20 bytes', { retryable: true })],
  ])('answers %s as %s', async (_case, code, failure) => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const snapshot = await lake.latest('silver_orders');
    storage.localPath = async () => {
      throw failure;
    };
    await expect(lake.query(snapshot, snapshot.files, [], { sql: 'SELECT count(*) AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 })).rejects.toMatchObject({ code });
  });

  // Bug: a read handed more files than the cache can pin lost its first files before DuckDB
  // opened them and answered 404 "vacuumed". It is refused up front, with the sizes.
  it('refuses a read larger than maxReadBytes before fetching anything, and reads one within it', async () => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const probe = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const total = (await probe.latest('silver_orders')).files.reduce((n, f) => n + f.size, 0);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine, maxReadBytes: total - 1 });
    const snapshot = await lake.latest('silver_orders');
    const read = { sql: 'SELECT count(*)::INTEGER AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 };
    await expect(lake.query(snapshot, snapshot.files, [], read)).rejects.toMatchObject({ code: 'QUERY_TOO_COMPLEX', details: { bytes: total, maxReadBytes: total - 1 } });
    expect(storage.evicted.size).toBe(0); // nothing was fetched
    const within = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine, maxReadBytes: total });
    const s2 = await within.latest('silver_orders');
    expect(await within.query(s2, s2.files, [], read)).toEqual([{ n: 40 }]);
  });

  // Reads that each fit but together pass what the cache can pin lost their oldest files to
  // eviction. A read now waits until its files fit beside those of the reads running.
  it('holds a read until the files of the reads running leave room for its own', async () => {
    const storage = new EvictingCacheStorage(path.join(root, 'silver_orders'), cacheDir);
    const probe = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine });
    const total = (await probe.latest('silver_orders')).files.reduce((n, f) => n + f.size, 0);
    const lake = new LakeAdapter({ tables: ['silver_orders'], storageFor: () => storage, engine, maxReadBytes: total });
    const snapshot = await lake.latest('silver_orders');
    const order: string[] = [];
    // DuckDB's sleep keeps the first read running while the second asks for its turn.
    const first = lake.query(snapshot, snapshot.files, [], { sql: 'SELECT count(*)::INTEGER AS n, sleep_ms(300) AS s FROM lake_snapshot', params: [], timeoutMs: 10_000 }).then((rows) => {
      order.push('first');
      return rows;
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = lake.query(snapshot, snapshot.files, [], { sql: 'SELECT count(*)::INTEGER AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 }).then((rows) => {
      order.push('second');
      return rows;
    });
    expect(await second).toEqual([{ n: 40 }]);
    expect(await first).toMatchObject([{ n: 40 }]);
    expect(order).toEqual(['first', 'second']);
    // Its turn not coming within its timeout: a retryable 503, not a read that may lose its files.
    const held = lake.query(snapshot, snapshot.files, [], { sql: 'SELECT count(*)::INTEGER AS n, sleep_ms(500) AS s FROM lake_snapshot', params: [], timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 50));
    await expect(lake.query(snapshot, snapshot.files, [], { sql: 'SELECT 1', params: [], timeoutMs: 100 })).rejects.toMatchObject({ code: 'QUERY_SATURATED' });
    await held;
  });
});
