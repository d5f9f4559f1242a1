import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LocalStorage, type LiveFile } from '@sluice/lake';
import { ResultCache } from '../src/cache/result-cache';
import { LakeAdapter } from '../src/lake/lake-adapter';
import type { LakeRead, TableSnapshot } from '../src/lake/lake-port';
import { SnapshotTracker } from '../src/lake/snapshots';
import { Limiter } from '../src/limits/limiter';
import { QueryService } from '../src/query/query-service';
import { createOrders, orderRow, tempDir } from './support';

// Every table row joined with 10^12 generated rows: only an interrupt ends it in test time.
const SLOW = 'SELECT count(*) AS n FROM lake_snapshot, range(1000000) a, range(1000000) b WHERE a.range + b.range < 0';

/** The real adapter and locked DuckDB, with every compiled query swapped for the slow one. */
class SlowSqlAdapter extends LakeAdapter {
  override query(snapshot: TableSnapshot, files: LiveFile[], pendingFiles: LiveFile[], read: LakeRead) {
    return super.query(snapshot, files, pendingFiles, { ...read, sql: SLOW, params: [] });
  }
}

async function waitUntil(what: string, check: () => boolean, ms: number): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > ms) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - started;
}

describe('query-api query timeout interrupts DuckDB', () => {
  let root: string;
  let engine: LakeQueryEngine;
  beforeAll(async () => {
    root = await tempDir('timeout');
    const table = await createOrders(root);
    await table.append({ rows: Array.from({ length: 50 }, (_, i) => orderRow(i)) });
    engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [root], threads: 2 });
  });
  afterAll(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  const adapterOptions = () => ({ tables: ['silver_orders'], storageFor: (t: string) => new LocalStorage(path.join(root, t)), engine });

  it('the adapter turns an interrupted query into QUERY_TIMEOUT within a bound', async () => {
    const lake = new LakeAdapter(adapterOptions());
    const snapshot = await lake.latest('silver_orders');
    const started = performance.now();
    await expect(lake.query(snapshot, snapshot.files, [], { sql: SLOW, params: [], timeoutMs: 200 })).rejects.toMatchObject({ code: 'QUERY_TIMEOUT', retryable: true });
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a query that runs DuckDB out of memory is QUERY_SATURATED (503) with a retry delay, not QUERY_INTERNAL (500)', async () => {
    const small = await LakeQueryEngine.create({ locked: true, allowedDirectories: [root], threads: 1, memoryLimit: '16MB' });
    const lake = new LakeAdapter({ ...adapterOptions(), engine: small });
    const snapshot = await lake.latest('silver_orders');
    const hungry = 'SELECT length(list(md5(range::VARCHAR))) AS n FROM lake_snapshot, range(40000)';
    await expect(lake.query(snapshot, snapshot.files, [], { sql: hungry, params: [], timeoutMs: 30_000 })).rejects.toMatchObject({
      code: 'QUERY_SATURATED',
      retryable: true,
      details: { retryAfterSeconds: 1 },
    });
  });

  it('504 query timeout frees the concurrency slot once DuckDB stops (the query no longer runs on)', async () => {
    const lake = new SlowSqlAdapter(adapterOptions());
    const limiter = new Limiter(1, 4, 5000);
    const service = new QueryService(lake, new SnapshotTracker(lake, 0), new ResultCache(0, 1e6), limiter, {
      maxRows: 100,
      queryTimeoutMs: 300,
      waitTimeoutMs: 1000,
      eventTimeColumn: 'event_time',
    });
    await expect(service.query('silver_orders', { groupBy: ['status'], aggregates: [{ fn: 'count', column: '*' }] })).rejects.toMatchObject({ code: 'QUERY_TIMEOUT' });
    // Before the fix the slot stayed taken for as long as the cross join ran (hours).
    const freedAfter = await waitUntil('the slot to be released', () => limiter.inFlight === 0, 5000);
    expect(freedAfter).toBeLessThan(5000);
    // The next request gets the slot and is itself interrupted on time, not queued behind a zombie.
    const started = performance.now();
    await expect(service.query('silver_orders', { groupBy: ['currency'], aggregates: [{ fn: 'count', column: '*' }] })).rejects.toMatchObject({ code: 'QUERY_TIMEOUT' });
    expect(performance.now() - started).toBeLessThan(5000);
    await waitUntil('the slot to be released again', () => limiter.inFlight === 0, 5000);
  });

  // A snapshot load waited on storage with no deadline: on a slow S3 (three tries of 30 s each
  // per request, several requests per load) every request for the table hung for minutes.
  it('a snapshot that does not load within the query timeout is 503 with Retry-After, for latest and past versions', async () => {
    let release = () => undefined as void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    class StalledAdapter extends LakeAdapter {
      override async latest(table: string) {
        await stalled;
        return super.latest(table);
      }
      override async atVersion(table: string, version: number) {
        await stalled;
        return super.atVersion(table, version);
      }
    }
    const lake = new StalledAdapter(adapterOptions());
    const service = new QueryService(lake, new SnapshotTracker(lake, 0), new ResultCache(0, 1e6), new Limiter(2, 4, 5000), {
      maxRows: 100,
      queryTimeoutMs: 300,
      waitTimeoutMs: 1000,
      eventTimeColumn: 'event_time',
    });
    const count = { aggregates: [{ fn: 'count' as const, column: '*' }] };
    for (const request of [count, { ...count, asOf: { version: 1 } }]) {
      const started = performance.now();
      await expect(service.query('silver_orders', request)).rejects.toMatchObject({ code: 'QUERY_LAKE_UNAVAILABLE', retryable: true, details: { table: 'silver_orders', retryAfterSeconds: 1 } });
      expect(performance.now() - started).toBeLessThan(3000);
    }
    // Once storage answers, so does the service.
    release();
    await expect(service.query('silver_orders', count)).resolves.toMatchObject({ rows: [{ count: 50 }] });
  });

  it('requests for the same past snapshot share one load and one query slot, a retry after a 503 too', async () => {
    let listings = 0;
    let release = () => undefined as void;
    const stalled = new Promise<void>((resolve) => (release = resolve));
    class SlowLog extends LocalStorage {
      override async list(prefix: string) {
        listings++;
        await stalled;
        return super.list(prefix);
      }
    }
    const lake = new LakeAdapter({ ...adapterOptions(), storageFor: (t: string) => new SlowLog(path.join(root, t)) });
    const limiter = new Limiter(4, 4, 5000);
    const service = new QueryService(lake, new SnapshotTracker(lake, 0), new ResultCache(0, 1e6), limiter, {
      maxRows: 100,
      queryTimeoutMs: 300,
      waitTimeoutMs: 1000,
      eventTimeColumn: 'event_time',
    });
    const past = { aggregates: [{ fn: 'count' as const, column: '*' }], asOf: { timestamp: new Date(Date.now() + 60_000).toISOString() } };
    const first = await Promise.allSettled([service.query('silver_orders', past), service.query('silver_orders', past)]);
    expect(first.map((r) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'answered'))).toEqual(['QUERY_LAKE_UNAVAILABLE', 'QUERY_LAKE_UNAVAILABLE']);
    const retry = service.query('silver_orders', past);
    // The one load holds one query slot, not one per waiter: the others stay free for queries.
    expect(limiter.inFlight).toBe(1);
    const listed = listings;
    release();
    await expect(retry).resolves.toMatchObject({ rows: [{ count: 50 }] });
    // The load the first request started is the one all three waited for: no listing began after it.
    expect(listed).toBe(1);
  });
});
