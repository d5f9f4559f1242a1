import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { SluiceError } from '@sluice/errors';
import { createLogger } from '@sluice/telemetry';
import { type AppDeps, buildApp } from './app';
import { TokenAuth } from './auth/tokens';
import { ResultCache } from './cache/result-cache';
import { queryError } from './errors';
import type { LakePort, LakeRead, LiveFile, TableSnapshot } from './lake/lake-port';
import { SnapshotTracker } from './lake/snapshots';
import { Limiter } from './limits/limiter';
import { DlqMetricsSource } from './pipeline/dlq-metrics';
import { QueryService } from './query/query-service';

// HTTP-layer tests: a table held in memory stands in for the lake so every error path can be
// driven through app.inject(). Reads over real Delta tables and DuckDB are in test/*.int.test.ts.
class MemoryLake implements LakePort {
  readonly relation = 'snap';
  versions: TableSnapshot[] = [];
  reads: { files: LiveFile[]; read: LakeRead }[] = [];
  rows: Record<string, unknown>[] = [{ order_id: 'o1', status: 'paid' }];
  gate: Promise<void> = Promise.resolve();
  tables() {
    return ['orders_silver', 'secret_table'];
  }
  async latest(table: string) {
    return this.versions[this.versions.length - 1] ?? snapshotOf(table, 0);
  }
  async changedSince(s: TableSnapshot) {
    return s !== this.versions[this.versions.length - 1];
  }
  async atVersion(table: string, version: number) {
    const s = this.versions.find((v) => v.version === version);
    if (!s) throw queryError('QUERY_VERSION_UNKNOWN', `${table} version ${version}`);
    return s;
  }
  async atTimestamp(table: string, ms: number) {
    const s = [...this.versions].reverse().find((v) => v.commitTimeMs <= ms);
    if (!s) throw queryError('QUERY_VERSION_UNKNOWN', `${table} at ${ms}`);
    return s;
  }
  async query(_s: TableSnapshot, files: LiveFile[], _pending: LiveFile[], read: LakeRead) {
    this.reads.push({ files, read });
    await this.gate;
    return this.rows.map((r) => ({ ...r }));
  }
  async close() {}
}

function snapshotOf(table: string, version: number): TableSnapshot {
  return {
    table,
    version,
    commitTimeMs: Date.UTC(2026, 0, 1) + version * 1000,
    shape: {
      columns: [
        { name: 'order_id', type: 'string', nullable: false },
        { name: 'status', type: 'string', nullable: true },
        { name: 'qty', type: 'long', nullable: true },
        { name: 'event_time', type: 'timestamp', nullable: false },
        { name: 'bucket', type: 'integer', nullable: false },
      ],
      partitionColumns: ['bucket'],
    },
    files: [0, 1, 2, 3].map((b) => ({
      path: `bucket=${b}/part-${version}.parquet`,
      size: 100,
      partitionValues: { bucket: String(b) },
      stats: { numRecords: 5, maxValues: { event_time: `2026-01-01T00:0${version}:00.000Z` } },
    })),
    txns: { 'orders-merge-0': version * 10 },
    configuration: {},
  };
}

const DASH = 'dashboard-token-0123456789';
const ADMIN = 'admin-token-0123456789abcd';

async function setup(
  opts: {
    maxConcurrent?: number;
    maxQueued?: number;
    ready?: boolean;
    lookups?: AppDeps['lookups'];
    dlqMetrics?: AppDeps['dlqMetrics'];
    onAnswer?: (f: { table: string; version: number }) => void;
    logger?: AppDeps['logger'];
    draining?: () => boolean;
    queueWaitMs?: number;
    queryTimeoutMs?: number;
  } = {},
) {
  const lake = new MemoryLake();
  lake.versions = [snapshotOf('orders_silver', 0), snapshotOf('orders_silver', 1)];
  const tracker = new SnapshotTracker(lake, 0);
  const limiter = new Limiter(opts.maxConcurrent ?? 4, opts.maxQueued ?? 0, opts.queueWaitMs ?? 50);
  const service = new QueryService(lake, tracker, new ResultCache(100, 1e6), limiter, {
    maxRows: 100,
    queryTimeoutMs: opts.queryTimeoutMs ?? 1000,
    waitTimeoutMs: 100,
    eventTimeColumn: 'event_time',
    onAnswer: opts.onAnswer,
  });
  const app = await buildApp({
    service,
    auth: new TokenAuth([
      { name: 'dash', token: DASH, tables: ['orders_silver'] },
      { name: 'admin', token: ADMIN, tables: ['*'] },
    ]),
    lookups: opts.lookups ?? { orders_silver: { keyColumns: ['order_id'], separator: '|', bucket: { column: 'bucket', bucketOf: () => 2 } } },
    dashboard: { assetsDir: join(__dirname, 'dashboard'), refreshMs: 1000, interval: '1m', buckets: 30, freshnessTables: [], orders: { table: 'orders_silver', statusColumn: 'status', timeColumn: 'event_time' } },
    dlqMetrics: opts.dlqMetrics,
    isReady: () => opts.ready ?? true,
    isDraining: opts.draining,
    bodyLimit: 64 * 1024,
    logger: opts.logger,
  });
  return { app, lake, service };
}

function post(app: FastifyInstance, body: unknown, token = DASH, table = 'orders_silver') {
  return app.inject({
    method: 'POST',
    url: `/v1/tables/${table}/query`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function nest(depth: number): unknown {
  let f: unknown = { column: 'status', op: '=', value: 'x' };
  for (let i = 0; i < depth; i++) f = { or: [f] };
  return f;
}

describe('query-api HTTP', () => {
  let app: FastifyInstance;
  let lake: MemoryLake;
  beforeEach(async () => ({ app, lake } = await setup()));
  afterEach(() => app.close());


  it('answers a query with rows, freshness and stats, then from the cache', async () => {
    const body = { select: ['order_id', 'status'], where: [{ column: 'bucket', op: '=', value: 1 }] };
    const res = await post(app, body);
    expect(res.statusCode).toBe(200);
    const json = res.json();
    expect(json.rows).toEqual([{ order_id: 'o1', status: 'paid' }]);
    expect(json.freshness).toEqual({
      table: 'orders_silver',
      version: 1,
      commitTime: '2026-01-01T00:00:01.000Z',
      maxEventTime: '2026-01-01T00:01:00.000Z',
      offsets: { 'orders-merge-0': 10 },
      pending: null,
    });
    expect(json.stats).toMatchObject({ filesTotal: 4, filesRead: 1, cached: false });
    expect(lake.reads[0].files.map((f) => f.path)).toEqual(['bucket=1/part-1.parquet']);
    const again = await post(app, { where: body.where, select: body.select });
    expect(again.json().stats.cached).toBe(true);
    expect(lake.reads).toHaveLength(1);
  });

  it('identical concurrent queries share one lake read', async () => {
    let open!: () => void;
    lake.gate = new Promise((r) => (open = r));
    const answers = Promise.all(Array.from({ length: 5 }, () => post(app, { select: ['status'] })));
    await new Promise((r) => setTimeout(r, 20));
    open();
    const res = await answers;
    expect(res.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect(lake.reads).toHaveLength(1);
    expect(res.filter((r) => r.json().stats.cached)).toHaveLength(4);
  });

  it('a new version misses the cache', async () => {
    await post(app, {});
    lake.versions.push(snapshotOf('orders_silver', 2));
    const res = await post(app, {});
    expect(res.json().stats.cached).toBe(false);
    expect(res.json().freshness.version).toBe(2);
  });

  it('reads a past version by number and by time', async () => {
    expect((await post(app, { asOf: { version: 0 } })).json().freshness.version).toBe(0);
    expect((await post(app, { asOf: { timestamp: '2026-01-01T00:00:00.500Z' } })).json().freshness.version).toBe(0);
    const res = await app.inject({ url: '/v1/tables/orders_silver?asOfVersion=0', headers: { authorization: `Bearer ${DASH}` } });
    expect(res.json()).toMatchObject({ table: 'orders_silver', rowCount: 20, fileCount: 4, sizeBytes: 400, freshness: { version: 0 } });
  });

  it('counts the pending tail in files and bytes, and reports rows as unknown while it holds some', async () => {
    const tailFile = { path: 'bucket=1/part-tail.parquet', size: 40, partitionValues: { bucket: '1' }, stats: { numRecords: 2 } };
    lake.versions.push({ ...snapshotOf('orders_silver', 3), pending: { version: 7, files: [tailFile], keys: ['order_id'] } });
    const res = await app.inject({ url: '/v1/tables/orders_silver', headers: { authorization: `Bearer ${DASH}` } });
    expect(res.json()).toMatchObject({ rowCount: null, fileCount: 5, sizeBytes: 440, freshness: { version: 3 } });
  });

  // The served-version gauge follows the newest answer; a time-travel read used to set it back.
  it('reports the newest version answered, not the version of a time-travel read', async () => {
    const answered: number[] = [];
    const built = await setup({ onAnswer: (f) => answered.push(f.version) });
    ({ app, lake } = built);
    await post(app, {});
    await post(app, { asOf: { version: 0 } });
    await app.inject({ url: '/v1/tables/orders_silver?asOfVersion=0', headers: { authorization: `Bearer ${DASH}` } });
    await post(app, {});
    expect(answered).toEqual([1, 1]);
    // The table dropped and created again under the same name: its versions start over.
    const created = { ...snapshotOf('orders_silver', 0), tableId: 'created-again', commitTimeMs: Date.UTC(2026, 0, 2) };
    lake.versions = [created];
    await post(app, {});
    expect(answered).toEqual([1, 1, 0]);
    // A late answer from the dropped table (an older commit) does not take the gauge back.
    built.service.freshness(snapshotOf('orders_silver', 1));
    expect(answered).toEqual([1, 1, 0]);
  });

  it('waits for a version or offsets to arrive (read-your-writes)', async () => {
    setTimeout(() => lake.versions.push(snapshotOf('orders_silver', 2)), 30);
    const res = await post(app, { waitFor: { offsets: { 'orders-merge-0': 20 }, timeoutMs: 2000 } });
    expect(res.statusCode).toBe(200);
    expect(res.json().freshness.offsets).toEqual({ 'orders-merge-0': 20 });
  });

  it('lists tables the token may read, with counts and freshness', async () => {
    const res = await app.inject({ url: '/v1/tables', headers: { authorization: `Bearer ${DASH}` } });
    expect(res.json().tables.map((t: { table: string }) => t.table)).toEqual(['orders_silver']);
    const admin = await app.inject({ url: '/v1/tables', headers: { authorization: `Bearer ${ADMIN}` } });
    expect(admin.json().tables).toHaveLength(2);
  });

  it('looks an entity up in its bucket only', async () => {
    const res = await app.inject({ url: '/v1/tables/orders_silver/entities/o1', headers: { authorization: `Bearer ${DASH}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json().entity).toEqual({ order_id: 'o1', status: 'paid' });
    expect(lake.reads[0].files.map((f) => f.path)).toEqual(['bucket=2/part-1.parquet']);
    expect(lake.reads[0].read.params).toEqual(['o1', '2']);
  });

  it('answers 503 QUERY_LAKE_UNAVAILABLE with Retry-After when the lake cannot be read for a while', async () => {
    // A retryable error the lake adapter did not name (its own LAKE_STORAGE_UNAVAILABLE it translates itself).
    lake.latest = async () => {
      throw new SluiceError('LAKE_STORAGE_SLOW', 'get s3://sluice-lake/tables/silver_orders/_delta_log/00000000000000000042.json: connect ECONNREFUSED 10.0.3.7:9000', { retryable: true });
    };
    for (const res of [await post(app, { select: ['status'] }), await app.inject({ url: '/v1/tables/orders_silver', headers: { authorization: `Bearer ${DASH}` } })]) {
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json().error).toMatchObject({ code: 'QUERY_LAKE_UNAVAILABLE', retryable: true, details: { cause: 'LAKE_STORAGE_SLOW' } });
      // The store's own words stay in the log: they name buckets, keys and endpoints.
      expect(res.body).not.toMatch(/s3:|sluice-lake|_delta_log|10\.0\.3\.7/);
    }
  });

  it('answers 503 with Retry-After when saturated', async () => {
    await app.close();
    ({ app, lake } = await setup({ maxConcurrent: 1, maxQueued: 0 }));
    let open!: () => void;
    lake.gate = new Promise((r) => (open = r));
    const first = post(app, { select: ['status'] });
    await new Promise((r) => setTimeout(r, 20));
    const second = await post(app, { select: ['order_id'] });
    expect(second.statusCode).toBe(503);
    expect(second.headers['retry-after']).toBe('1');
    expect(second.json().error).toMatchObject({ code: 'QUERY_SATURATED', retryable: true });
    // Loading a past snapshot (a log replay) takes a slot too; it used to bypass every limit.
    for (const url of ['/v1/tables/orders_silver?asOfVersion=0', '/v1/tables/orders_silver?asOfTimestamp=2026-01-01T00:00:00.500Z']) {
      const past = await app.inject({ url, headers: { authorization: `Bearer ${DASH}` } });
      expect({ status: past.statusCode, code: past.json().error?.code }).toEqual({ status: 503, code: 'QUERY_SATURATED' });
    }
    open();
    expect((await first).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/tables/orders_silver?asOfVersion=0', headers: { authorization: `Bearer ${DASH}` } })).statusCode).toBe(200);
  });

  it('a query still queued when the query timeout passes is 503 QUERY_SATURATED (it never ran), the running one 504', async () => {
    await app.close();
    ({ app, lake } = await setup({ maxConcurrent: 1, maxQueued: 1, queueWaitMs: 5000, queryTimeoutMs: 200 }));
    let open!: () => void;
    lake.gate = new Promise((r) => (open = r));
    const first = post(app, { select: ['status'] });
    await new Promise((r) => setTimeout(r, 20));
    const queued = await post(app, { select: ['order_id'] });
    expect({ status: queued.statusCode, code: queued.json().error.code, retryAfter: queued.headers['retry-after'] }).toEqual({ status: 503, code: 'QUERY_SATURATED', retryAfter: '1' });
    const ran = await first;
    expect({ status: ran.statusCode, code: ran.json().error.code }).toEqual({ status: 504, code: 'QUERY_TIMEOUT' });
    open();
  });

  it('answers a path that is not valid percent-encoded UTF-8 with the catalog body (fastify had its own)', async () => {
    for (const url of ['/v1/tables/orders_silver/entities/%ED%A0%80', '/v1/tables/orders_silver/entities/o-%E0%A4%A']) {
      const res = await app.inject({ url, headers: { authorization: `Bearer ${DASH}` } });
      expect({ status: res.statusCode, error: res.json().error }).toEqual({
        status: 400,
        error: { code: 'QUERY_INVALID', message: 'the request does not match its schema: the path is not valid percent-encoded UTF-8', retryable: false, details: { cause: 'FST_ERR_BAD_URL' } },
      });
    }
  });

  it('while draining, answers every request but /healthz with 503 QUERY_NOT_READY and Retry-After', async () => {
    let draining = false;
    const d = await setup({ draining: () => draining });
    try {
      expect((await d.app.inject({ url: '/v1/tables', headers: { authorization: `Bearer ${DASH}` } })).statusCode).toBe(200);
      draining = true;
      const res = await d.app.inject({ url: '/v1/tables', headers: { authorization: `Bearer ${DASH}` } });
      expect({ status: res.statusCode, code: res.json().error.code, retryAfter: res.headers['retry-after'] }).toEqual({ status: 503, code: 'QUERY_NOT_READY', retryAfter: '1' });
      expect((await d.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await d.app.close();
    }
  });

  it('/healthz, /readyz, /docs and the dashboard need no token; /metrics is not on the API port', async () => {
    expect((await app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
    // main.ts serves it on OPS_PORT: the API port is the one the load balancer exposes.
    expect((await app.inject({ url: '/metrics' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/docs/' })).statusCode).toBe(200);
    const spec = (await app.inject({ url: '/openapi.json' })).json();
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(['/v1/tables', '/v1/tables/{table}', '/v1/tables/{table}/entities/{key}', '/v1/tables/{table}/query']),
    );
    const page = await app.inject({ url: '/dashboard' });
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('/dashboard/dashboard.js');
    const config = (await app.inject({ url: '/dashboard/config.json' })).json();
    expect(config.orders.table).toBe('orders_silver');
    expect(config).not.toHaveProperty('assetsDir'); // a server path, not the page's business
  });

  it('looks up a composite key by its parts, bucketed by the whole key', async () => {
    await app.close();
    const seen: string[] = [];
    ({ app, lake } = await setup({
      lookups: { orders_silver: { keyColumns: ['order_id', 'status'], separator: '|', bucket: { column: 'bucket', bucketOf: (k) => (seen.push(k), 3) } } },
    }));
    const res = await app.inject({ url: `/v1/tables/orders_silver/entities/${encodeURIComponent('o1|paid')}`, headers: { authorization: `Bearer ${DASH}` } });
    expect(res.statusCode).toBe(200);
    expect(lake.reads[0].read.params).toEqual(['o1', 'paid', '3']);
    expect(seen).toEqual(['o1|paid']);
    const bad = await app.inject({ url: '/v1/tables/orders_silver/entities/o1', headers: { authorization: `Bearer ${DASH}` } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('QUERY_VALUE_INVALID');
  });

  it("logs a failed request through the service's logger: its fields, its level names, secrets redacted", async () => {
    const lines: string[] = [];
    const logger = createLogger({ service: 'query-api', destination: { write: (line) => lines.push(line) } });
    ({ app, lake } = await setup({ logger }));
    lake.query = async () => {
      throw Object.assign(new Error('storage broke'), { headers: { authorization: 'Bearer SECRET-TOKEN-123' } });
    };
    const res = await post(app, { select: ['order_id'] });
    expect(res.statusCode).toBe(500);
    const failed = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request failed');
    expect(failed).toMatchObject({ service: 'query-api', level: 'warn', code: 'QUERY_INTERNAL' });
    expect(lines.join('')).not.toContain('SECRET-TOKEN-123');
    expect(lines.join('')).toContain('[REDACTED]');
  });

  it('/v1/pipeline/dlq: token needed, 404 when not configured, 503 + Retry-After when validate does not answer', async () => {
    expect((await app.inject({ url: '/v1/pipeline/dlq' })).json().error.code).toBe('QUERY_AUTH_MISSING');
    const none = await app.inject({ url: '/v1/pipeline/dlq', headers: { authorization: `Bearer ${DASH}` } });
    expect([none.statusCode, none.json().error.code]).toEqual([404, 'QUERY_ROUTE_UNKNOWN']);
    await app.close();
    // Port 9 (discard) on loopback: nothing listens there, the connection is refused at once.
    ({ app, lake } = await setup({ dlqMetrics: new DlqMetricsSource(['http://127.0.0.1:9/metrics'], 500) }));
    const down = await app.inject({ url: '/v1/pipeline/dlq', headers: { authorization: `Bearer ${DASH}` } });
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    // Any token reads this: the endpoint by its place in the list, why in a word, never its address.
    expect(down.json().error).toMatchObject({ code: 'QUERY_UPSTREAM_UNAVAILABLE', retryable: true, details: { sources: [{ source: 1, ok: false, error: 'unreachable' }] } });
    expect(down.body).not.toContain('127.0.0.1');
  });

  it('/readyz answers 503 while not ready', async () => {
    await app.close();
    ({ app } = await setup({ ready: false }));
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json().error.code).toBe('QUERY_NOT_READY');
  });
});

describe('query-api HTTP errors', () => {
  // Building the app compiles the schemas (~0.3 s), so the error table shares one app.
  let app: FastifyInstance;
  let lake: MemoryLake;
  beforeAll(async () => ({ app, lake } = await setup()));
  afterAll(() => app.close());
  beforeEach(() => {
    lake.rows = [{ order_id: 'o1', status: 'paid' }];
  lake.reads = [];
});

  const cases: [string, () => Promise<{ statusCode: number; json(): { error: { code: string } } }>, number, string][] = [
    ['no token', () => app.inject({ url: '/v1/tables' }), 401, 'QUERY_AUTH_MISSING'],
    ['wrong token', () => app.inject({ url: '/v1/tables', headers: { authorization: 'Bearer nope-nope-nope-nope' } }), 401, 'QUERY_AUTH_INVALID'],
    ['basic auth', () => app.inject({ url: '/v1/tables', headers: { authorization: 'Basic YTpi' } }), 401, 'QUERY_AUTH_INVALID'],
    ['token checked before the body', () => post(app, '{not json', 'bad-token-bad-token'), 401, 'QUERY_AUTH_INVALID'],
    ['table outside the token scope', () => post(app, {}, DASH, 'secret_table'), 403, 'QUERY_AUTH_FORBIDDEN'],
    ['unknown table', () => post(app, {}, ADMIN, 'nope'), 404, 'QUERY_TABLE_UNKNOWN'],
    ['unknown table (describe)', () => app.inject({ url: '/v1/tables/nope', headers: { authorization: `Bearer ${ADMIN}` } }), 404, 'QUERY_TABLE_UNKNOWN'],
    ['table name with SQL', () => post(app, {}, ADMIN, encodeURIComponent('x"; DROP TABLE y')), 400, 'QUERY_INVALID'],
    ['unknown column', () => post(app, { select: ['nope'] }), 404, 'QUERY_COLUMN_UNKNOWN'],
    ['injection in a column name', () => post(app, { where: [{ column: 'status" OR 1=1 --', op: '=', value: 'x' }] }), 404, 'QUERY_COLUMN_UNKNOWN'],
    ['unknown route', () => app.inject({ url: '/v2/nothing' }), 404, 'QUERY_ROUTE_UNKNOWN'],
    ['unknown version', () => post(app, { asOf: { version: 99 } }), 404, 'QUERY_VERSION_UNKNOWN'],
    ['before the first commit', () => post(app, { asOf: { timestamp: '2020-01-01T00:00:00Z' } }), 404, 'QUERY_VERSION_UNKNOWN'],
    ['unknown operator', () => post(app, { where: [{ column: 'status', op: 'LIKE', value: 'x' }] }), 400, 'QUERY_INVALID'],
    ['sql as operator', () => post(app, { where: [{ column: 'status', op: '= 1 OR 1=1 --', value: 'x' }] }), 400, 'QUERY_INVALID'],
    ['unknown aggregate', () => post(app, { aggregates: [{ fn: 'sleep', column: '*' }] }), 400, 'QUERY_INVALID'],
    ['alias with SQL', () => post(app, { aggregates: [{ fn: 'count', column: '*', as: 'n" FROM x --' }] }), 400, 'QUERY_INVALID'],
    ['negative limit', () => post(app, { limit: -1 }), 400, 'QUERY_INVALID'],
    ['negative offset', () => post(app, { offset: -5 }), 400, 'QUERY_INVALID'],
    ['fractional limit', () => post(app, { limit: 1.5 }), 400, 'QUERY_INVALID'],
    ['limit as a string', () => post(app, { limit: '10' }), 400, 'QUERY_INVALID'],
    ['limit above maxRows', () => post(app, { limit: 101 }), 400, 'QUERY_TOO_COMPLEX'],
    ['unknown property', () => post(app, { select: ['status'], sql: 'SELECT 1' }), 400, 'QUERY_INVALID'],
    ['null value', () => post(app, { where: [{ column: 'status', op: '=', value: null }] }), 400, 'QUERY_INVALID'],
    ['object value', () => post(app, { where: [{ column: 'status', op: '=', value: { $gt: 1 } }] }), 400, 'QUERY_INVALID'],
    ['4 levels of nesting', () => post(app, { where: [nest(4)] }), 400, 'QUERY_INVALID'],
    ['very deep nesting', () => post(app, JSON.stringify({ where: [nest(2000)] })), 400, 'QUERY_INVALID'],
    ['huge IN list', () => post(app, { where: [{ column: 'qty', op: 'in', value: Array.from({ length: 1001 }, (_, i) => i) }] }), 400, 'QUERY_INVALID'],
    ['empty IN list', () => post(app, { where: [{ column: 'qty', op: 'in', value: [] }] }), 400, 'QUERY_INVALID'],
    ['wrong value type', () => post(app, { where: [{ column: 'qty', op: '=', value: 'abc' }] }), 400, 'QUERY_VALUE_INVALID'],
    ['bad timestamp', () => post(app, { asOf: { timestamp: 'yesterday' } }), 400, 'QUERY_INVALID'],
    ['asOf with waitFor', () => post(app, { asOf: { version: 0 }, waitFor: { version: 1 } }), 400, 'QUERY_SHAPE_INVALID'],
    ['ungrouped column', () => post(app, { select: ['qty'], groupBy: ['status'] }), 400, 'QUERY_SHAPE_INVALID'],
    ['body not JSON', () => post(app, '{"select": [}'), 400, 'QUERY_INVALID'],
    ['body is an array', () => post(app, '[1,2]'), 400, 'QUERY_INVALID'],
    ['empty body', () => post(app, ''), 400, 'QUERY_INVALID'],
    [
      'wrong media type',
      () => app.inject({ method: 'POST', url: '/v1/tables/orders_silver/query', headers: { authorization: `Bearer ${DASH}`, 'content-type': 'text/plain' }, payload: 'x' }),
      415,
      'QUERY_MEDIA_UNSUPPORTED',
    ],
    ['body too large', () => post(app, { select: ['x'.repeat(70 * 1024)] }), 413, 'QUERY_BODY_TOO_LARGE'],
    ['wait times out', () => post(app, { waitFor: { version: 9, timeoutMs: 50 } }), 504, 'QUERY_WAIT_TIMEOUT'],
    ['wait for an unknown appId', () => post(app, { waitFor: { offsets: { 'no-such-app': 1 }, timeoutMs: 10 } }), 504, 'QUERY_WAIT_TIMEOUT'],
    ['bad waitOffsets', () => app.inject({ url: '/v1/tables/orders_silver?waitOffsets=abc', headers: { authorization: `Bearer ${DASH}` } }), 400, 'QUERY_INVALID'],
    ['waitTimeoutMs alone', () => app.inject({ url: '/v1/tables/orders_silver?waitTimeoutMs=5', headers: { authorization: `Bearer ${DASH}` } }), 400, 'QUERY_SHAPE_INVALID'],
    ['both asOf forms', () => app.inject({ url: '/v1/tables/orders_silver?asOfVersion=1&asOfTimestamp=2026-01-01T00:00:00Z', headers: { authorization: `Bearer ${DASH}` } }), 400, 'QUERY_SHAPE_INVALID'],
    ['unknown query parameter', () => app.inject({ url: '/v1/tables/orders_silver?sql=1', headers: { authorization: `Bearer ${DASH}` } }), 400, 'QUERY_INVALID'],
    ['lookup on a table without a key', () => app.inject({ url: '/v1/tables/secret_table/entities/x', headers: { authorization: `Bearer ${ADMIN}` } }), 400, 'QUERY_LOOKUP_UNSUPPORTED'],
  ];
  it.each(cases.map(([name, call, status, code]) => ({ name, call, status, code })))('$name → $status $code', async ({ call, status, code }) => {
    const res = await call();
    expect(res.json().error.code).toBe(code);
    expect(res.statusCode).toBe(status);
  });

  // The router's default limit of 100 characters per path parameter answered longer keys, which
  // the lookup's schema allows up to 1,024, with a bare 414 outside the API's error format.
  it('looks up keys up to the 1,024 characters the schema allows (not QUERY_ROUTE_UNKNOWN past 100)', async () => {
    lake.rows = [];
    for (const key of ['k'.repeat(101), 'ü'.repeat(1024)]) {
      const res = await app.inject({ url: `/v1/tables/orders_silver/entities/${encodeURIComponent(key)}`, headers: { authorization: `Bearer ${DASH}` } });
      expect({ status: res.statusCode, body: res.json() }).toMatchObject({ status: 404, body: { error: { code: 'QUERY_ENTITY_NOT_FOUND' } } });
    }
    const tooLong = await app.inject({ url: `/v1/tables/orders_silver/entities/${'k'.repeat(1025)}`, headers: { authorization: `Bearer ${DASH}` } });
    expect(tooLong.statusCode).toBe(400);
  });

  it('a missing entity is a 404 with the version it was looked for in', async () => {
    lake.rows = [];
    const res = await app.inject({ url: '/v1/tables/orders_silver/entities/ghost', headers: { authorization: `Bearer ${DASH}` } });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toMatchObject({ code: 'QUERY_ENTITY_NOT_FOUND', details: { freshness: { version: 1 } } });
  });

  it('filter nesting up to the limit is accepted', async () => {
    expect((await post(app, { where: [nest(3)] })).statusCode).toBe(200);
  });

  it('1000 IN values are accepted', async () => {
    const res = await post(app, { where: [{ column: 'status', op: 'in', value: Array.from({ length: 1000 }, (_, i) => `s${i}`) }] });
    expect(res.statusCode).toBe(200);
    expect(lake.reads[0].read.params).toHaveLength(1000);
  });
});

describe('OpenAPI description', () => {
  it('describes the query body and the bearer scheme, with no dangling reference', async () => {
    const { app } = await setup();
    try {
      const spec = (await app.inject({ url: '/openapi.json' })).json();
      expect(spec.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
      const body = spec.paths['/v1/tables/{table}/query'].post.requestBody.content['application/json'].schema;
      expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['select', 'where', 'groupBy', 'aggregates', 'timeBucket', 'orderBy', 'limit', 'offset', 'asOf', 'waitFor']));
      // Every $ref in the document must point at something in the document.
      const text = JSON.stringify(spec);
      const refs = [...text.matchAll(/"\$ref":"#\/([^"]+)"/g)];
      // The body's schemas are inlined today (no $ref at all); one added later must resolve.
      for (const [, ref] of refs) {
        const target = ref.split('/').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[decodeURIComponent(part)], spec);
        expect({ ref, found: target !== undefined }).toEqual({ ref, found: true });
      }
    } finally {
      await app.close();
    }
  });
});
