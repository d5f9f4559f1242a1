// query-api over real Delta tables on disk written with @sluice/lake, read through a locked DuckDB.
// Answers are checked against DuckDB running equivalent SQL directly on the same snapshot.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { SluiceError } from '@sluice/errors';
import { LakeQueryEngine, LakeTable, LocalStorage, type Storage } from '@sluice/lake';
import { KEY_HASH_COLUMN, keyHashOf } from '@sluice/contracts';
import { createTelemetry } from '@sluice/telemetry';
import { BUCKETS, DAY0, TOKEN, type TestApp, createOrders, get, orderRow, query, startApp, tempDir } from './support';

const ROWS = 2000;

async function direct(table: LakeTable, sql: string, params: (string | number)[] = []): Promise<Record<string, unknown>[]> {
  const engine = await LakeQueryEngine.create();
  const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
  try {
    return await session.queryJson(sql, params);
  } finally {
    session.close();
  }
}

type Row = Record<string, unknown>;

/**
 * The table's current rows as the test wrote them, folded by version in JS: an expected side that
 * shares no code with the lake's views (the DuckDB comparisons read through them, as query-api does).
 */
function writtenRows(): Row[] {
  const byKey = new Map<string, Row>();
  for (const r of [...Array.from({ length: ROWS }, (_, i) => orderRow(i)), ...Array.from({ length: 300 }, (_, i) => orderRow(i * 5, 2, 'shipped'))]) {
    const cur = byKey.get(r.order_id as string);
    if (!cur || (r.version as number) > (cur.version as number)) byKey.set(r.order_id as string, r);
  }
  return [...byKey.values()];
}

const nums = (rows: Record<string, unknown>[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v])));

describe('query-api over real tables', () => {
  let root: string;
  let table: LakeTable;
  let t: TestApp;

  beforeAll(async () => {
    root = await tempDir('query');
    table = await createOrders(root);
    const rows = Array.from({ length: ROWS }, (_, i) => orderRow(i));
    await table.merge({ source: { rows }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 1 }] });
    const updates = Array.from({ length: 300 }, (_, i) => orderRow(i * 5, 2, 'shipped'));
    await table.merge({ source: { rows: updates }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 2 }] });
    t = await startApp(root, ['silver_orders', 'not_created_yet']);
  });
  afterAll(() => t.close());

  it('exposes Prometheus metrics through libs/telemetry', async () => {
    const telemetry = createTelemetry({ service: 'query-api', logLevel: 'error', subscribeChannels: false });
    const m = await startApp(root, ['silver_orders'], { telemetry });
    try {
      await query(m.app, 'silver_orders', { aggregates: [{ fn: 'count', column: '*' }] });
      const text = await telemetry.metricsText();
      expect(text).toMatch(/sluice_query_api_http_request_duration_seconds_count\{[^}]*route="\/v1\/tables\/:table\/query"[^}]*\} 1/);
      expect(text).toMatch(/sluice_query_api_table_version\{[^}]*table="silver_orders"[^}]*\} 2/);
    } finally {
      await m.close();
      await telemetry.shutdown();
    }
  });

  it('lists and describes tables with version, counts and freshness', async () => {
    const list = await get(t.app, '/v1/tables');
    expect(list.body.tables.map((x: { table: string }) => x.table)).toEqual(['silver_orders']);
    const d = await get(t.app, '/v1/tables/silver_orders');
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ table: 'silver_orders', rowCount: ROWS, partitionColumns: ['bucket'], freshness: { version: 2, offsets: { 'fold:orders-0': 2 }, pending: null } });
    expect(d.body.fileCount).toBeGreaterThanOrEqual(BUCKETS);
    expect(d.body.columns.find((c: { name: string }) => c.name === 'event_time')).toEqual({ name: 'event_time', type: 'timestamp', nullable: false });
    expect(Date.parse(d.body.freshness.maxEventTime)).toBeGreaterThan(DAY0);
    expect((await get(t.app, '/v1/tables/not_created_yet')).body.error.code).toBe('QUERY_TABLE_UNKNOWN');
  });

  // The list took no read options and ignored them: `?asOfVersion=1` answered the latest versions.
  it('refuses read options on the table list instead of ignoring them', async () => {
    const res = await get(t.app, '/v1/tables?asOfVersion=1');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('QUERY_INVALID');
  });

  it('grouped aggregates equal DuckDB on the same files', async () => {
    const res = await query(t.app, 'silver_orders', {
      groupBy: ['status'],
      aggregates: [
        { fn: 'count', column: '*', as: 'n' },
        { fn: 'sum', column: 'total_cents', as: 'cents' },
        { fn: 'min', column: 'total_cents', as: 'lo' },
        { fn: 'max', column: 'event_time', as: 'last' },
        { fn: 'count_distinct', column: 'customer_id', as: 'customers' },
        { fn: 'avg', column: 'item_count', as: 'items' },
      ],
      orderBy: [{ column: 'status' }],
    });
    expect(res.status).toBe(200);
    const expected = await direct(
      table,
      `SELECT status, count(*) AS n, sum(total_cents) AS cents, min(total_cents) AS lo, strftime(max(event_time), '%Y-%m-%dT%H:%M:%SZ') AS last,
        count(DISTINCT customer_id) AS customers, avg(item_count) AS items FROM t GROUP BY status ORDER BY status`,
    );
    expect(res.body.rows).toEqual(nums(expected));
    expect(res.body.rows.reduce((a: number, r: { n: number }) => a + r.n, 0)).toBe(ROWS);
    expect(res.body.freshness.version).toBe(2);
    // And the rows the test wrote, folded and aggregated in JS.
    const groups = new Map<string, Row[]>();
    for (const r of writtenRows()) groups.set(r.status as string, [...(groups.get(r.status as string) ?? []), r]);
    const oracle = [...groups.keys()].sort().map((status) => {
      const g = groups.get(status)!;
      const cents = g.map((r) => r.total_cents as number);
      return {
        status,
        n: g.length,
        cents: cents.reduce((a, b) => a + b, 0),
        lo: Math.min(...cents),
        last: new Date(Math.max(...g.map((r) => Date.parse(r.event_time as string)))).toISOString().replace('.000Z', 'Z'),
        customers: new Set(g.map((r) => r.customer_id)).size,
        items: g.reduce((a, r) => a + (r.item_count as number), 0) / g.length,
      };
    });
    expect(res.body.rows.map((r: Row) => ({ ...r, items: Number((r.items as number).toFixed(9)) }))).toEqual(oracle.map((r) => ({ ...r, items: Number(r.items.toFixed(9)) })));
  });

  const at = (iso: string) => Date.parse(iso);
  it.each([
    ['in', [{ column: 'status', op: 'in', value: ['paid', 'shipped'] }], `status IN ('paid', 'shipped')`, (r: Row) => ['paid', 'shipped'].includes(r.status as string)],
    [
      'between on a timestamp',
      [{ column: 'event_time', op: 'between', value: ['2026-01-01T02:00:00Z', '2026-01-01T03:00:00Z'] }],
      `event_time BETWEEN '2026-01-01T02:00:00Z' AND '2026-01-01T03:00:00Z'`,
      (r: Row) => at(r.event_time as string) >= at('2026-01-01T02:00:00Z') && at(r.event_time as string) <= at('2026-01-01T03:00:00Z'),
    ],
    ['prefix', [{ column: 'order_id', op: 'prefix', value: 'o-00001' }], `starts_with(order_id, 'o-00001')`, (r: Row) => (r.order_id as string).startsWith('o-00001')],
    ['is null', [{ column: 'coupon_code', op: 'is null' }], 'coupon_code IS NULL', (r: Row) => r.coupon_code === null],
    [
      '!= and <',
      [{ column: 'currency', op: '!=', value: 'EUR' }, { column: 'total_cents', op: '<', value: 500 }],
      `currency <> 'EUR' AND total_cents < 500`,
      (r: Row) => r.currency !== 'EUR' && (r.total_cents as number) < 500,
    ],
    [
      'nested or/and',
      [{ or: [{ column: 'bucket', op: '=', value: 3 }, { and: [{ column: 'item_count', op: '>=', value: 4 }, { column: 'status', op: '=', value: 'paid' }] }] }],
      `(bucket = 3 OR (item_count >= 4 AND status = 'paid'))`,
      (r: Row) => r.bucket === 3 || ((r.item_count as number) >= 4 && r.status === 'paid'),
    ],
  ])('filter %s matches DuckDB and the rows written', async (_name, where, sqlWhere, keep) => {
    const res = await query(t.app, 'silver_orders', { where, aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
    expect(res.status).toBe(200);
    const [expected] = await direct(table, `SELECT count(*) AS n FROM t WHERE ${sqlWhere}`);
    expect(res.body.rows[0].n).toBe(Number(expected.n));
    expect(res.body.rows[0].n).toBe(writtenRows().filter(keep).length);
  });

  it('prunes files by partition and statistics and still answers exactly', async () => {
    const res = await query(t.app, 'silver_orders', { where: [{ column: 'bucket', op: '=', value: 5 }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
    const [expected] = await direct(table, 'SELECT count(*) AS n FROM t WHERE bucket = 5');
    expect(res.body.rows[0].n).toBe(Number(expected.n));
    expect(res.body.stats.filesRead).toBeLessThan(res.body.stats.filesTotal);
    const none = await query(t.app, 'silver_orders', { where: [{ column: 'total_cents', op: '>', value: 1_000_000 }] });
    expect(none.body).toMatchObject({ rows: [], rowCount: 0, stats: { filesRead: 0 } });
  });

  it('a time series over a day, bucketed by hour, equals DuckDB', async () => {
    const res = await query(t.app, 'silver_orders', {
      timeBucket: { column: 'event_time', interval: '1h', as: 'hour' },
      groupBy: ['status'],
      aggregates: [{ fn: 'count', column: '*', as: 'n' }],
      where: [{ column: 'event_time', op: '>=', value: '2026-01-01T00:00:00Z' }, { column: 'event_time', op: '<', value: '2026-01-02T00:00:00Z' }],
      orderBy: [{ column: 'hour' }, { column: 'status' }],
    });
    const expected = await direct(
      table,
      `SELECT strftime(time_bucket(INTERVAL '1 hour', event_time), '%Y-%m-%dT%H:%M:%SZ') AS hour, status, count(*) AS n FROM t GROUP BY ALL ORDER BY hour, status`,
    );
    expect(res.body.rows).toEqual(nums(expected));
    expect(res.body.rows[0].hour).toBe('2026-01-01T00:00:00Z');
  });

  it('pages with limit/offset and says when an answer was cut', async () => {
    const page = { select: ['order_id'], orderBy: [{ column: 'order_id' }], limit: 10 };
    const first = await query(t.app, 'silver_orders', page);
    const second = await query(t.app, 'silver_orders', { ...page, offset: 10 });
    expect(first.body.truncated).toBe(true);
    expect(first.body.rows.map((r: { order_id: string }) => r.order_id)).toEqual(Array.from({ length: 10 }, (_, i) => orderRow(i).order_id));
    expect(second.body.rows[0].order_id).toBe(orderRow(10).order_id);
    const last = await query(t.app, 'silver_orders', { ...page, offset: ROWS - 5 });
    expect(last.body).toMatchObject({ rowCount: 5, truncated: false });
  });

  it('pages through rows tied on the ordered column, each row once', async () => {
    // Ties on status came back in whatever order DuckDB's threads produced them: pages repeated
    // rows and skipped others. Every other output now breaks ties.
    const seen: string[] = [];
    for (let offset = 0; offset < ROWS; offset += 150) {
      const res = await query(t.app, 'silver_orders', { select: ['order_id', 'status'], orderBy: [{ column: 'status' }], limit: 150, offset });
      expect(res.status).toBe(200);
      seen.push(...res.body.rows.map((r: { order_id: string }) => r.order_id));
    }
    expect(seen).toHaveLength(ROWS);
    expect(new Set(seen).size).toBe(ROWS);
    const unordered = await query(t.app, 'silver_orders', { select: ['order_id'], limit: 10, offset: 10 });
    expect({ status: unordered.status, code: unordered.body.error.code }).toEqual({ status: 400, code: 'QUERY_SHAPE_INVALID' });
  });

  it('refuses what it would otherwise ignore or lose: read options in the query string of a JSON query, an alias named __proto__', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/tables/silver_orders/query?asOfVersion=1',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ aggregates: [{ fn: 'count', column: '*', as: 'n' }] }),
    });
    expect(res.statusCode).toBe(400);
    const proto = await query(t.app, 'silver_orders', { aggregates: [{ fn: 'count', column: '*', as: '__proto__' }] });
    expect(proto.status).toBe(400);
    const fine = await query(t.app, 'silver_orders', { aggregates: [{ fn: 'count', column: '*', as: '__proto' }] });
    expect(fine.body.rows).toEqual([{ __proto: ROWS }]);
  });

  it('looks up an entity reading only its bucket', async () => {
    const res = await get(t.app, `/v1/tables/silver_orders/entities/${orderRow(10).order_id}`);
    expect(res.status).toBe(200);
    expect(res.body.entity).toMatchObject({ order_id: 'o-0000010', version: 2, status: 'shipped', bucket: orderRow(10).bucket });
    expect(res.body.entity.event_time).toMatch(/^2026-01-01T00:10:02Z$/);
    expect(res.body.stats.filesRead).toBeLessThan(res.body.stats.filesTotal);
    const missing = await get(t.app, '/v1/tables/silver_orders/entities/o-9999999');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('QUERY_ENTITY_NOT_FOUND');
  });

  it('looks up an entity by key hash too: of a bucket clustered into several files, only the one whose hash range holds the key is read', async () => {
    const root = await tempDir('qa-cluster');
    const table = await createOrders(root);
    // as merge-compaction writes silver: rows split into files by key-hash range within a bucket
    await table.append({ rows: Array.from({ length: 400 }, (_, i) => orderRow(i)) }, { sortBy: [KEY_HASH_COLUMN], maxRowsPerFile: 4 });
    const c = await startApp(root, ['silver_orders']);
    try {
      const target = orderRow(123);
      const snap = await table.snapshot();
      const inBucket = snap.files.filter((f) => f.partitionValues.bucket === String(target.bucket));
      expect(inBucket.length).toBeGreaterThan(2);
      const res = await get(c.app, `/v1/tables/silver_orders/entities/${target.order_id}`);
      expect(res.status).toBe(200);
      expect(res.body.entity).toMatchObject({ order_id: target.order_id, [KEY_HASH_COLUMN]: keyHashOf(target.order_id as string) });
      expect(res.body.stats.filesRead).toBe(1);
    } finally {
      await c.close();
    }
  });

  it('hostile values stay values in real DuckDB', async () => {
    for (const value of ["' OR '1'='1", "o-0000001'; DROP TABLE t; --", '%', '_', '\\', '\u0000']) {
      const res = await query(t.app, 'silver_orders', { where: [{ column: 'order_id', op: '=', value }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
      expect(res.body.rows[0].n).toBe(0);
      const prefix = await query(t.app, 'silver_orders', { where: [{ column: 'order_id', op: 'prefix', value }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
      expect(prefix.body.rows[0].n).toBe(0);
    }
    const entity = await get(t.app, `/v1/tables/silver_orders/entities/${encodeURIComponent("x' OR 1=1 --")}`);
    expect(entity.body.error.code).toBe('QUERY_ENTITY_NOT_FOUND');
    const ids = Array.from({ length: 1000 }, (_, i) => orderRow(i).order_id);
    const big = await query(t.app, 'silver_orders', { where: [{ column: 'order_id', op: 'in', value: ids }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
    expect(big.body.rows[0].n).toBe(1000);
    const badDate = await query(t.app, 'silver_orders', { where: [{ column: 'event_time', op: '>', value: '2026-02-31T00:00:00Z' }] });
    expect(badDate.status).toBe(400);
    expect(badDate.body.error.code).toBe('QUERY_VALUE_INVALID');
  });

  it('travels in time by version and by timestamp', async () => {
    const q = { where: [{ column: 'status', op: '=', value: 'shipped' }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] };
    const now = await query(t.app, 'silver_orders', q);
    const v1 = await query(t.app, 'silver_orders', { ...q, asOf: { version: 1 } });
    expect(v1.body.freshness).toMatchObject({ version: 1, offsets: { 'fold:orders-0': 1 } });
    expect(now.body.rows[0].n).toBeGreaterThan(v1.body.rows[0].n);
    const history = await table.history();
    const v1Time = history.find((h) => h.version === 1)!.timestampMs;
    const byTime = await query(t.app, 'silver_orders', { ...q, asOf: { timestamp: new Date(v1Time).toISOString() } });
    expect(byTime.body.freshness.version).toBe(1);
    expect(byTime.body.rows).toEqual(v1.body.rows);
    expect((await query(t.app, 'silver_orders', { ...q, asOf: { version: 99 } })).body.error.code).toBe('QUERY_VERSION_UNKNOWN');
    expect((await query(t.app, 'silver_orders', { ...q, asOf: { timestamp: '2000-01-01T00:00:00Z' } })).body.error.code).toBe('QUERY_VERSION_UNKNOWN');
    const old = await get(t.app, '/v1/tables/silver_orders?asOfVersion=0');
    expect(old.body).toMatchObject({ rowCount: 0, fileCount: 0, freshness: { version: 0 } });
  });

  it('caches by (query, data read) and a commit to the files read invalidates naturally; read-your-writes waits for offsets', async () => {
    const q = { where: [{ column: 'status', op: '=', value: 'cancelled' }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] };
    const a = await query(t.app, 'silver_orders', q);
    const b = await query(t.app, 'silver_orders', q);
    expect(a.body.stats.cached).toBe(false);
    expect(b.body.stats.cached).toBe(true);
    expect(b.body.rows).toEqual(a.body.rows);

    // The wait starts before the commit exists; the answer must include it.
    const waiting = query(t.app, 'silver_orders', { ...q, waitFor: { offsets: { 'fold:orders-0': 3 }, timeoutMs: 15_000 } });
    await new Promise((r) => setTimeout(r, 100));
    const cancel = Array.from({ length: 50 }, (_, i) => orderRow(1000 + i * 7, 3, 'cancelled'));
    await table.merge({ source: { rows: cancel }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 3 }] });
    const c = await waiting;
    expect(c.status).toBe(200);
    expect(c.body.freshness).toMatchObject({ version: 3, offsets: { 'fold:orders-0': 3 } });
    expect(c.body.stats.cached).toBe(false);
    const [expected] = await direct(table, `SELECT count(*) AS n FROM t WHERE status = 'cancelled'`);
    expect(c.body.rows[0].n).toBe(Number(expected.n));
    expect(c.body.rows[0].n).toBeGreaterThan(a.body.rows[0].n);

    const late = await get(t.app, '/v1/tables/silver_orders?waitVersion=50&waitTimeoutMs=200');
    expect(late.status).toBe(504);
    expect(late.body.error).toMatchObject({ code: 'QUERY_WAIT_TIMEOUT', retryable: true, details: { version: 3 } });
  });
  it('a cached answer survives a commit that leaves its files alone, with the new freshness; a commit to its files recomputes it', async () => {
    const key = orderRow(11);
    const other = Array.from({ length: 200 }, (_, i) => orderRow(5000 + i)).find((r) => r.bucket !== key.bucket)!;
    const lookup = (waitVersion: number) => get(t.app, `/v1/tables/silver_orders/entities/${key.order_id}?waitVersion=${waitVersion}`);
    const v0 = (await table.snapshot()).version;
    expect((await lookup(v0)).body.stats.cached).toBe(false);
    expect((await lookup(v0)).body.stats.cached).toBe(true);
    // Another bucket changes: same files for this key, so the answer is served again, at v0 + 1.
    await table.merge({ source: { rows: [other] }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 10 }] });
    const kept = await lookup(v0 + 1);
    expect(kept.body.stats.cached).toBe(true);
    expect(kept.body.freshness).toMatchObject({ version: v0 + 1, offsets: { 'fold:orders-0': 10 } });
    expect(kept.body.entity).toMatchObject({ order_id: key.order_id, version: 1 });
    // The key's own bucket changes: new files, a new answer.
    await table.merge({ source: { rows: [orderRow(11, 7, 'delivered')] }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 11 }] });
    const changed = await lookup(v0 + 2);
    expect(changed.body.stats.cached).toBe(false);
    expect(changed.body.entity).toMatchObject({ order_id: key.order_id, version: 7, status: 'delivered' });
    expect(changed.body.freshness.version).toBe(v0 + 2);
  });
});

describe('query-api limits over a real table', () => {
  let root: string;

  beforeAll(async () => {
    root = await tempDir('limits');
    const table = await createOrders(root);
    await table.append({ rows: Array.from({ length: 3000 }, (_, i) => orderRow(i)) });
  });

  it('times out a slow query with 504 QUERY_TIMEOUT', async () => {
    // The snapshot is loaded beforehand: its load has the same deadline (503 when storage is slow).
    const t = await startApp(root, ['silver_orders'], { queryTimeoutMs: 1, cacheEntries: 0, refreshMs: 600_000, warm: true });
    try {
      const res = await query(t.app, 'silver_orders', { groupBy: ['customer_id', 'status'], aggregates: [{ fn: 'count_distinct', column: 'order_id' }] });
      expect(res.status).toBe(504);
      expect(res.body.error).toMatchObject({ code: 'QUERY_TIMEOUT', retryable: true });
    } finally {
      await t.close();
    }
  });

  it('answers 503 with Retry-After beyond the concurrency limit and its queue', async () => {
    const t = await startApp(root, ['silver_orders'], { maxConcurrent: 1, maxQueued: 1, cacheEntries: 0 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => query(t.app, 'silver_orders', { where: [{ column: 'item_count', op: '>', value: i % 5 }], groupBy: ['customer_id'], aggregates: [{ fn: 'count', column: '*' }] })),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses).toContain(200);
      expect(statuses).toContain(503);
      const refused = answers.find((a) => a.status === 503)!;
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.error.code).toBe('QUERY_SATURATED');
    } finally {
      await t.close();
    }
  });

  it('a version whose files were vacuumed is a 404, not a 500', async () => {
    const dir = await tempDir('vacuum');
    const table = await createOrders(dir);
    for (let k = 0; k < 3; k++) await table.append({ rows: Array.from({ length: 50 }, (_, i) => orderRow(k * 50 + i)) });
    await table.compact({ targetFileBytes: 64 * 1024 * 1024 });
    await table.vacuum({ retentionMs: 0, unsafeShortRetention: true });
    const t = await startApp(dir, ['silver_orders']);
    try {
      const now = await query(t.app, 'silver_orders', { aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
      expect(now.body.rows[0].n).toBe(150);
      const old = await query(t.app, 'silver_orders', { asOf: { version: 2 }, aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
      expect(old.status).toBe(404);
      expect(old.body.error.code).toBe('QUERY_VERSION_UNKNOWN');
    } finally {
      await t.close();
    }
  });

  it('answers a column named __proto__ (another writer\'s table) as a column of its rows', async () => {
    const dir = await tempDir('proto-column');
    const odd = await LakeTable.create(new LocalStorage(path.join(dir, 'odd')), { columns: [{ name: 'id', type: 'long' }, { name: '__proto__', type: 'string' }] }, { name: 'odd' });
    await odd.append({ rows: [Object.fromEntries([['id', 7], ['__proto__', 'kept']])] });
    const t = await startApp(dir, ['odd']);
    try {
      const res = await query(t.app, 'odd', { select: ['id', '__proto__'] });
      expect({ status: res.status, rows: res.body.rows }).toEqual({ status: 200, rows: [Object.fromEntries([['id', 7], ['__proto__', 'kept']])] });
    } finally {
      await t.close();
    }
  });

  it('a table another writer upgraded past its protocol is named with a reason, and the list still answers', async () => {
    const dir = await tempDir('unreadable');
    await (await createOrders(dir)).append({ rows: [orderRow(1)] });
    const other = await createOrders(dir, 'silver_other');
    await other.append({ rows: [orderRow(2)] });
    // As Spark writes when it turns on deletion vectors: reader 3, writer 7.
    const protocol = { protocol: { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['deletionVectors'], writerFeatures: ['deletionVectors'] } };
    await fs.writeFile(path.join(dir, 'silver_other', '_delta_log', '00000000000000000002.json'), `${JSON.stringify(protocol)}\n`);
    const t = await startApp(dir, ['silver_orders', 'silver_other']);
    try {
      const upgraded = await get(t.app, '/v1/tables/silver_other');
      expect({ status: upgraded.status, code: upgraded.body.error.code, details: upgraded.body.error.details }).toEqual({
        status: 500,
        code: 'QUERY_TABLE_UNREADABLE',
        details: { table: 'silver_other', cause: 'LAKE_UNSUPPORTED_PROTOCOL' },
      });
      const list = await get(t.app, '/v1/tables');
      expect(list.status).toBe(200);
      expect(list.body.tables.map((d: { table: string }) => d.table)).toEqual(['silver_orders']);
      expect(list.body.unreadable).toEqual([{ table: 'silver_other', cause: 'LAKE_UNSUPPORTED_PROTOCOL' }]);
    } finally {
      await t.close();
    }
  });

  it('lists every other table when one table\'s storage refuses this service, naming why', async () => {
    const dir = await tempDir('refused');
    await (await createOrders(dir)).append({ rows: [orderRow(1)] });
    await (await createOrders(dir, 'silver_other')).append({ rows: [orderRow(2)] });
    const denied = new SluiceError('LAKE_STORAGE_ACCESS_DENIED', 'access denied', { details: { uri: 's3://secret-bucket/silver_other' } });
    const refusing = (table: string): Storage => {
      const real = new LocalStorage(path.join(dir, table));
      if (table !== 'silver_other') return real;
      return new Proxy(real, { get: (target, prop, receiver) => (typeof Reflect.get(target, prop, receiver) === 'function' ? () => Promise.reject(denied) : Reflect.get(target, prop, receiver)) });
    };
    const t = await startApp(dir, ['silver_orders', 'silver_other'], { storageFor: refusing });
    try {
      const list = await get(t.app, '/v1/tables');
      expect(list.status).toBe(200);
      expect(list.body.tables.map((d: { table: string }) => d.table)).toEqual(['silver_orders']);
      expect(list.body.unreadable).toEqual([{ table: 'silver_other', cause: 'LAKE_STORAGE_ACCESS_DENIED' }]);
      expect(JSON.stringify(list.body)).not.toContain('secret-bucket');
    } finally {
      await t.close();
    }
  });

  it('compares double and float columns with values of any magnitude; a float past 32 bits is a 400', async () => {
    const dir = await tempDir('floats');
    const name = 'silver_measures';
    const table = await LakeTable.create(new LocalStorage(path.join(dir, name)), {
      columns: [
        { name: 'id', type: 'string', nullable: false },
        { name: 'ratio', type: 'double' },
        { name: 'f32', type: 'float' },
      ],
      partitionColumns: [],
    }, { name });
    await table.append({ rows: [{ id: 'a', ratio: 0.5, f32: 1.5 }, { id: 'b', ratio: -2e300, f32: -3e38 }, { id: 'c', ratio: 2e19, f32: 2e19 }] });
    const t = await startApp(dir, [name]);
    try {
      const ids = async (where: unknown[]) => {
        const res = await query(t.app, name, { select: ['id'], where, orderBy: [{ column: 'id' }] });
        expect(res.status).toBe(200);
        return res.body.rows.map((r: { id: string }) => r.id);
      };
      // A whole JS number was bound as BIGINT: 1e19 failed as out of int64 range (a 500).
      expect(await ids([{ column: 'ratio', op: '<', value: 1e19 }])).toEqual(['a', 'b']);
      expect(await ids([{ column: 'ratio', op: '>', value: -1e300 }])).toEqual(['a', 'c']);
      expect(await ids([{ column: 'f32', op: '>=', value: 1e19 }])).toEqual(['c']);
      expect(await ids([{ column: 'f32', op: 'between', value: [-3.4e38, 1e19] }])).toEqual(['a', 'b']);
      expect(await ids([{ column: 'ratio', op: 'in', value: [2e19, 0.5] }])).toEqual(['a', 'c']);
      const tooBig = await query(t.app, name, { where: [{ column: 'f32', op: '<', value: 1e39 }] });
      expect({ status: tooBig.status, code: tooBig.body.error.code }).toEqual({ status: 400, code: 'QUERY_VALUE_INVALID' });
    } finally {
      await t.close();
    }
  });

  it('the locked engine reads nothing outside its directories', async () => {
    // A table outside the engine's allowed directories: the read is refused, nothing leaks.
    const outside = await tempDir('outside');
    const table = await createOrders(outside);
    await table.append({ rows: [orderRow(1)] });
    const t = await startApp(path.join(root, 'only-this'), ['silver_orders'], { storageFor: () => table.storage });
    try {
      const res = await query(t.app, 'silver_orders', { select: ['order_id'] });
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('QUERY_INTERNAL');
      expect(JSON.stringify(res.body)).not.toContain('o-0000001');
    } finally {
      await t.close();
    }
  });
});
