// query-api benchmark: 50 concurrent HTTP clients (autocannon, this process) against query-api
// (its real main.ts, a separate process) over a silver orders table on local disk, compared with
// DuckDB running the same SQL on the same files through libs/lake's query engine without HTTP.
//   npx tsx tools/bench/query-api/bench.ts --rows 1000000 --duration 10 --connections 50
// Results and the exact command: docs/bench/query-api.md.
import type { ChildProcess } from 'node:child_process';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import * as path from 'node:path';
import autocannon from 'autocannon';
import { CONTRACTS, KEY_HASH_COLUMN, ORDER_STATUSES, SILVER_PARQUET_CODEC, SILVER_BUCKETS, SILVER_ROW_GROUP_ROWS, SILVER_ROW_ORDER, bucketOf, keyHashOf } from '@sluice/contracts';
import { LakeQueryEngine, LakeTable, type LiveFile, LocalStorage, TABLE_PROPERTIES } from '@sluice/lake';
import { bundleService, spawnService } from '../../src/bench/service-bundle';
import { openLoop } from './open-loop';

const o = args({
  rows: 1_000_000,
  duration: 10,
  connections: 50,
  days: 7,
  port: 18390,
  baselineRuns: 200,
  rebuild: false,
  // Seconds of open-loop load before each sweep, not recorded.
  warmup: 5,
  // Open-loop rates (requests/s over all `connections` clients), one run of `duration` s each.
  lookupRates: '100,200,300',
  aggregateRates: '5,10,20',
  cachedRates: '500,1000,2000',
  // DuckDB threads of the server (QUERY_API_DUCKDB_THREADS) and of the baseline engine.
  duckdbThreads: 2,
  // Parquet codec of the bench table (`sluice.parquet.compression`; default silver's); each
  // codec has its own table.
  compression: SILVER_PARQUET_CODEC as string,
  // The server's (and the baseline's) DuckDB external file cache (QUERY_API_DUCKDB_FILE_CACHE):
  // on or off, query-api's default.
  fileCache: 'off',
});
if (o.fileCache !== 'on' && o.fileCache !== 'off') throw new Error('--file-cache is on or off');
const ROOT = path.resolve(__dirname, '../../..');
// Laid out as merge-compaction writes silver: key-hash column, rows in SILVER_ROW_ORDER (day of
// event_time, then key hash), SILVER_ROW_GROUP_ROWS-row row groups. (`rows-N` and
// `silver-rows-N` held older layouts: no key hash; key-hash order alone.)
const LAKE = path.join(ROOT, '.sluice/bench/query-api', `silver-day-key-${o.compression === 'snappy' ? '' : `${o.compression}-`}rows-${o.rows}`);
const TABLE = CONTRACTS.orders.tables.silver;
const TOKEN = 'bench-token-0123456789abcdef';
const DAY0 = Date.UTC(2026, 0, 1);
const DAY = 86_400_000;

function args<T extends Record<string, number | boolean | string>>(defaults: T): T {
  const out: Record<string, number | boolean | string> = { ...defaults };
  const camel = (flag: string) => flag.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)$/.exec(argv[i]);
    const name = m && camel(m[1]);
    if (!name || !(name in defaults)) throw new Error(`unknown option ${argv[i]}; known: ${Object.keys(defaults).join(', ')}`);
    const kind = typeof defaults[name];
    out[name] = kind === 'boolean' ? true : kind === 'string' ? argv[++i] : Number(argv[++i]);
  }
  return out as T;
}

const orderId = (i: number) => `o-${String(i).padStart(8, '0')}`;

/** Builds the table once (kept under .sluice/bench for later runs): 1 file per bucket after compaction. */
async function buildTable(): Promise<LakeTable> {
  const dir = path.join(LAKE, TABLE);
  if (existsSync(path.join(dir, '_delta_log')) && !o.rebuild) return LakeTable.open(new LocalStorage(dir));
  await fs.rm(dir, { recursive: true, force: true });
  const table = await LakeTable.create(new LocalStorage(dir), {
    columns: [
      { name: 'event_id', type: 'string', nullable: false },
      { name: 'event_time', type: 'timestamp', nullable: false },
      { name: 'version', type: 'long', nullable: false },
      { name: 'op', type: 'string' },
      { name: 'order_id', type: 'string', nullable: false },
      { name: 'customer_id', type: 'string' },
      { name: 'status', type: 'string' },
      { name: 'total_cents', type: 'long' },
      { name: 'currency', type: 'string' },
      { name: 'item_count', type: 'integer' },
      { name: KEY_HASH_COLUMN, type: 'long', nullable: false },
      { name: 'bucket', type: 'integer', nullable: false },
    ],
    partitionColumns: ['bucket'],
    properties: { [TABLE_PROPERTIES.rowGroupRows]: String(SILVER_ROW_GROUP_ROWS), [TABLE_PROPERTIES.compression]: o.compression },
  });
  const batch = 100_000;
  for (let start = 0; start < o.rows; start += batch) {
    const rows = Array.from({ length: Math.min(batch, o.rows - start) }, (_, j) => {
      const i = start + j;
      const id = orderId(i);
      return {
        event_id: `${id}-1`,
        event_time: new Date(DAY0 + Math.floor((i * 7919) % (o.days * DAY))).toISOString(),
        version: 1,
        op: 'upsert',
        order_id: id,
        customer_id: `c-${i % 50_000}`,
        status: ORDER_STATUSES[i % ORDER_STATUSES.length],
        total_cents: (i * 37) % 100_000,
        currency: i % 3 === 0 ? 'EUR' : 'USD',
        item_count: 1 + (i % 7),
        [KEY_HASH_COLUMN]: keyHashOf(id),
        bucket: bucketOf(id, SILVER_BUCKETS),
      };
    });
    await table.append({ rows }, { txns: [{ appId: 'fold:bench-0', version: start + rows.length }] });
    process.stderr.write(`built ${start + rows.length} rows\n`);
  }
  await table.compact({ targetFileBytes: 256 * 1024 * 1024, sortBy: SILVER_ROW_ORDER });
  return table;
}

const lookupSql = `SELECT * FROM lake_snapshot WHERE "order_id" = CAST($1 AS VARCHAR) AND "bucket" = CAST($2 AS INTEGER) AND "${KEY_HASH_COLUMN}" = CAST($3 AS BIGINT) LIMIT 2 OFFSET 0`;
const dayWhere = (day: number) => [new Date(DAY0 + day * DAY).toISOString(), new Date(DAY0 + (day + 1) * DAY).toISOString()];
const aggregateBody = (day: number) => ({
  where: [{ column: 'event_time', op: '>=', value: dayWhere(day)[0] }, { column: 'event_time', op: '<', value: dayWhere(day)[1] }],
  groupBy: ['status'],
  aggregates: [
    { fn: 'count', column: '*', as: 'orders' },
    { fn: 'sum', column: 'total_cents', as: 'cents' },
  ],
  orderBy: [{ column: 'status' }],
});
// What query-api compiles aggregateBody to (checked against the server's answer below).
const aggregateSql =
  `SELECT "status" AS "status", count(*) AS "orders", sum("total_cents") AS "cents" FROM lake_snapshot ` +
  `WHERE "event_time" >= CAST($1 AS TIMESTAMPTZ) AND "event_time" < CAST($2 AS TIMESTAMPTZ) GROUP BY "status" ORDER BY "status" ASC NULLS LAST LIMIT 10001 OFFSET 0`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

type BaselineStats = { p50: number; p95: number; runs: number };

/**
 * DuckDB on the same files via libs/lake, no HTTP, two ways: `session` opens a session with a
 * view per query (what query-api did before 2026-11-30) and `read` is the engine's pooled,
 * prepared read that query-api now uses. Sequential latency of both, and throughput of `read` with
 * as many queries in parallel as query-api runs (4).
 */
async function baseline(table: LakeTable): Promise<Record<'lookup' | 'aggregate', Record<'session' | 'read', BaselineStats> & { readQpsAt4: number }> & { day0Answer: Record<string, unknown>[] }> {
  const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [LAKE], threads: o.duckdbThreads, memoryLimit: '1024MB', externalFileCache: o.fileCache === 'on' });
  const snapshot = await table.snapshot();
  const storage = table.storage;
  const run = async (how: 'session' | 'read', files: ((f: LiveFile) => boolean) | undefined, sql: string, params: string[]) => {
    const views = { lake_snapshot: { storage, snapshot, files } };
    if (how === 'read') return engine.read(views, sql, params);
    const s = await engine.open(views);
    try {
      return await s.queryJson(sql, params);
    } finally {
      s.close();
    }
  };
  const lookup = async (how: 'session' | 'read') => {
    const id = orderId(Math.floor(Math.random() * o.rows));
    const bucket = String(bucketOf(id, SILVER_BUCKETS));
    const rows = await run(how, (f) => f.partitionValues.bucket === bucket, lookupSql, [id, bucket, String(keyHashOf(id))]);
    if (rows.length !== 1) throw new Error(`baseline lookup of ${id} found ${rows.length} rows`);
  };
  const aggregate = (how: 'session' | 'read', i: number) => run(how, undefined, aggregateSql, dayWhere(i % o.days));
  const time = async (runs: number, fn: (i: number) => Promise<unknown>): Promise<BaselineStats> => {
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await fn(i);
      ms.push(performance.now() - t0);
    }
    ms.sort((a, b) => a - b);
    return { p50: round(percentile(ms, 50)), p95: round(percentile(ms, 95)), runs };
  };
  // Throughput with as many queries in parallel as query-api allows DuckDB (4), for the same wall
  // time as each HTTP run: the ceiling the HTTP layer is compared with.
  const parallel = async (fn: (i: number) => Promise<unknown>) => {
    const until = performance.now() + o.duration * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (performance.now() < until) await fn(done++);
      }),
    );
    return Math.round(done / o.duration);
  };
  const aggregateRuns = Math.max(20, Math.floor(o.baselineRuns / 5));
  return {
    // What the server must answer for aggregateBody(0): DuckDB's rows for the same SQL and files.
    day0Answer: (await aggregate('read', 0)) as Record<string, unknown>[],
    lookup: {
      session: await time(o.baselineRuns, () => lookup('session')),
      read: await time(o.baselineRuns, () => lookup('read')),
      readQpsAt4: await parallel(() => lookup('read')),
    },
    aggregate: {
      session: await time(aggregateRuns, (i) => aggregate('session', i)),
      read: await time(aggregateRuns, (i) => aggregate('read', i)),
      readQpsAt4: await parallel((i) => aggregate('read', i)),
    },
  };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

interface Server {
  proc: ChildProcess;
  maxRssMb: () => number;
  stop: () => Promise<void>;
}

async function startServer(cacheEntries: number): Promise<Server> {
  // As its image runs it (deploy/bundle.sh), built under .sluice/bench.
  const main = await bundleService('query-api');
  const proc = spawnService(
    main,
    {
      QUERY_API_PORT: String(o.port),
      OPS_PORT: '0',
      QUERY_API_LAKE_ROOT: LAKE,
      QUERY_API_TABLES: TABLE,
      QUERY_API_TOKENS: JSON.stringify([{ name: 'bench', token: TOKEN, tables: ['*'] }]),
      QUERY_API_CACHE_ENTRIES: String(cacheEntries),
      QUERY_API_MAX_CONCURRENT: '4',
      QUERY_API_MAX_QUEUED: '256',
      // Long enough that 50 clients queue rather than being shed, so latency is what is measured.
      QUERY_API_QUEUE_WAIT_MS: '30000',
      QUERY_API_DUCKDB_THREADS: String(o.duckdbThreads),
      QUERY_API_DUCKDB_FILE_CACHE: String(o.fileCache === 'on'),
      LOG_LEVEL: 'warn',
    },
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  let maxRss = 0;
  const sample = setInterval(() => {
    try {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))?.[1] ?? 0);
      maxRss = Math.max(maxRss, kb / 1024);
    } catch {
      // the process has exited
    }
  }, 200);
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${o.port}/readyz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 150) throw new Error('query-api did not become ready');
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    proc,
    maxRssMb: () => Math.round(maxRss),
    stop: () =>
      new Promise((resolve) => {
        clearInterval(sample);
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

async function load(name: string, requests: autocannon.Request[]): Promise<Record<string, number | string>> {
  const times: number[] = [];
  // The callback form returns the emitter (the promise form does not), so per-response times can be taken.
  let resolveResult!: (r: autocannon.Result) => void;
  let rejectResult!: (e: unknown) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => ((resolveResult = resolve), (rejectResult = reject)));
  const instance = autocannon({
    url: `http://127.0.0.1:${o.port}`,
    connections: o.connections,
    duration: o.duration,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    requests,
  }, (err, res) => (err ? rejectResult(err) : resolveResult(res)));
  instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => times.push(ms));
  const result = await done;
  times.sort((a, b) => a - b);
  return {
    scenario: name,
    requests: result.requests.total,
    rps: Math.round(result.requests.average),
    p50: round(percentile(times, 50)),
    p95: round(percentile(times, 95)),
    p99: round(percentile(times, 99)),
    max: round(times[times.length - 1] ?? 0),
    non2xx: result.non2xx,
    statusCodes: JSON.stringify(Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, v]) => [code, (v as { count: number }).count]))),
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

async function main() {
  const table = await buildTable();
  const snap = await table.snapshot();
  process.stderr.write(`table: ${snap.numRecords()} rows in ${snap.files.length} files, version ${snap.version}\n`);
  const base = await baseline(table);
  process.stderr.write(`baseline: ${JSON.stringify({ ...base, day0Answer: undefined })}\n`);

  const lookupPath = () => `/v1/tables/${TABLE}/entities/${orderId(Math.floor(Math.random() * o.rows))}`;
  const lookupRequest: autocannon.Request = { method: 'GET', setupRequest: (req) => ({ ...req, path: lookupPath() }) };
  let day = 0;
  const aggregateRequest: autocannon.Request = {
    method: 'POST',
    path: `/v1/tables/${TABLE}/query`,
    setupRequest: (req) => ({ ...req, body: JSON.stringify(aggregateBody(day++ % o.days)) }),
  };

  const aggregatePath = `/v1/tables/${TABLE}/query`;
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const rates = (list: string) => list.split(',').map(Number).filter((r) => r > 0);
  /** The open-loop percentiles over DuckDB alone's (sequential `read`) on the same SQL and files. */
  const vsDuckdb = (r: { p50: number; p95: number }, duck: BaselineStats) => ({ p50: round(r.p50 / duck.p50), p95: round(r.p95 / duck.p95) });
  const sweep = async (scenario: string, list: string, duck: BaselineStats, request: (i: number) => { method: 'GET' | 'POST'; path: string; body?: string }) => {
    // Warm-up, not recorded: footers read, statements prepared, JIT done, a cached answer computed.
    await openLoop({ port: o.port, clients: o.connections, rate: rates(list)[0], durationS: o.warmup, headers, request });
    for (const rate of rates(list)) {
      const r = await openLoop({ port: o.port, clients: o.connections, rate, durationS: o.duration, headers, request });
      const out = { scenario, ...r, vsDuckdb: vsDuckdb(r, duck) };
      process.stderr.write(`open loop ${scenario} @ ${rate}/s: ${JSON.stringify(out)}\n`);
      openResults.push(out);
    }
  };

  const results: Record<string, number | string>[] = [];
  const openResults: Record<string, unknown>[] = [];
  let rss: Record<string, number> = {};
  const uncached = await startServer(0);
  try {
    // The server's answer must equal DuckDB's for the same SQL (what the baseline times), value for value.
    const check = (await (await fetch(`http://127.0.0.1:${o.port}${aggregatePath}`, { method: 'POST', headers, body: JSON.stringify(aggregateBody(0)) })).json()) as { rows?: Record<string, unknown>[] };
    const asText = (rows: Record<string, unknown>[] | undefined) => JSON.stringify((rows ?? []).map((r) => [r.status, r.orders, r.cents].map(String)));
    if (check.rows?.length !== ORDER_STATUSES.length || asText(check.rows) !== asText(base.day0Answer)) {
      throw new Error(`the server's aggregate ${asText(check.rows).slice(0, 300)} differs from DuckDB's ${asText(base.day0Answer).slice(0, 300)}`);
    }
    await sweep('point lookup (cache off)', o.lookupRates, base.lookup.read, () => ({ method: 'GET', path: lookupPath() }));
    await sweep('grouped aggregate over one day (cache off)', o.aggregateRates, base.aggregate.read, (i) => ({ method: 'POST', path: aggregatePath, body: JSON.stringify(aggregateBody(i % o.days)) }));
    results.push(await load('point lookup (cache off)', [lookupRequest]));
    results.push(await load('grouped aggregate over one day (cache off)', [aggregateRequest]));
    rss = { ...rss, uncached: uncached.maxRssMb() };
  } finally {
    await uncached.stop();
  }
  const cached = await startServer(2000);
  try {
    const cachedBody = JSON.stringify(aggregateBody(3));
    await sweep('grouped aggregate, cached answer', o.cachedRates, base.aggregate.read, () => ({ method: 'POST', path: aggregatePath, body: cachedBody }));
    results.push(await load('grouped aggregate, cached answer', [{ method: 'POST', path: aggregatePath, body: cachedBody }]));
    rss = { ...rss, cached: cached.maxRssMb() };
  } finally {
    await cached.stop();
  }
  console.log(
    JSON.stringify(
      { rows: o.rows, files: snap.files.length, connections: o.connections, durationS: o.duration, baseline: base, openLoop: openResults, closedLoop: results, maxRssMb: rss },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
