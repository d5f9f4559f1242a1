import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { CONTRACTS, KEY_HASH_COLUMN, KEY_SEPARATOR, ORDER_STATUSES, bucketOf, keyHashOf } from '@sluice/contracts';
import { type ColumnSpec, LakeQueryEngine, LakeTable, LocalStorage, type Storage } from '@sluice/lake';
import { type Telemetry, httpMetricsHook } from '@sluice/telemetry';
import { buildApp } from '../src/app';
import { TokenAuth } from '../src/auth/tokens';
import { ResultCache } from '../src/cache/result-cache';
import { LakeAdapter } from '../src/lake/lake-adapter';
import { SnapshotTracker } from '../src/lake/snapshots';
import { DlqMetricsSource } from '../src/pipeline/dlq-metrics';
import { Limiter } from '../src/limits/limiter';
import { QueryService, type QueryServiceOptions } from '../src/query/query-service';
import type { DashboardSettings } from '../src/routes/dashboard';

export const TOKEN = 'integration-token-0123456789';
export const BUCKETS = 8;

/** A fresh directory under SLUICE_TEST_DIR (or the OS temp dir). */
export async function tempDir(label: string): Promise<string> {
  const dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `query-api-${label}-${randomUUID()}`);
  await fs.mkdir(dir, { recursive: true });
  return dir;
}

/** Columns of an orders silver table as merge-compaction writes it (envelope, key, payload, key hash, bucket). */
export const ORDER_COLUMNS: ColumnSpec[] = [
  { name: 'event_id', type: 'string', nullable: false },
  { name: 'event_time', type: 'timestamp', nullable: false },
  { name: 'producer', type: 'string' },
  { name: 'version', type: 'long', nullable: false },
  { name: 'op', type: 'string' },
  { name: 'order_id', type: 'string', nullable: false },
  { name: 'customer_id', type: 'string' },
  { name: 'status', type: 'string' },
  { name: 'total_cents', type: 'long' },
  { name: 'currency', type: 'string' },
  { name: 'item_count', type: 'integer' },
  { name: 'coupon_code', type: 'string' },
  { name: KEY_HASH_COLUMN, type: 'long', nullable: false },
  { name: 'bucket', type: 'integer', nullable: false },
];

export const DAY0 = Date.UTC(2026, 0, 1);

/** Order `i` at entity version `version`: deterministic status, amount and time (minute i). */
export function orderRow(i: number, version = 1, status?: string): Record<string, unknown> {
  const orderId = `o-${String(i).padStart(7, '0')}`;
  return {
    event_id: `${orderId}-v${version}`,
    event_time: new Date(DAY0 + (i % 1440) * 60_000 + version * 1000).toISOString(),
    producer: 'test',
    version,
    op: 'upsert',
    order_id: orderId,
    customer_id: `c-${i % 97}`,
    status: status ?? ORDER_STATUSES[(i + version) % ORDER_STATUSES.length],
    total_cents: (i * 37) % 10_000,
    currency: i % 3 === 0 ? 'EUR' : 'USD',
    item_count: 1 + (i % 5),
    coupon_code: i % 4 === 0 ? null : `C${i % 11}`,
    [KEY_HASH_COLUMN]: keyHashOf(orderId),
    bucket: bucketOf(orderId, BUCKETS),
  };
}

export async function createOrders(root: string, name = CONTRACTS.orders.tables.silver): Promise<LakeTable> {
  return LakeTable.create(new LocalStorage(path.join(root, name)), { columns: ORDER_COLUMNS, partitionColumns: ['bucket'] }, { name });
}

export interface TestApp {
  app: FastifyInstance;
  service: QueryService;
  close(): Promise<void>;
}

/** Locked engines by the directories they may read, closed when the test file ends. */
const lockedEngines = new Map<string, Promise<LakeQueryEngine>>();
afterAll(async () => {
  const engines = [...lockedEngines.values()];
  lockedEngines.clear();
  for (const engine of await Promise.all(engines)) engine.close();
});

/** query-api over real tables under `root`, with a locked engine that may read only `root`. */
export async function startApp(
  root: string,
  tables: string[],
  options: Partial<QueryServiceOptions> & {
    maxConcurrent?: number;
    maxQueued?: number;
    cacheEntries?: number;
    refreshMs?: number;
    /** Load every table's latest snapshot before the app is returned (with `refreshMs`, requests then read it without a log read). */
    warm?: boolean;
    storageFor?: (table: string) => Storage;
    allowedDirectories?: string[];
    dashboard?: Partial<DashboardSettings>;
    telemetry?: Telemetry;
    dlqMetricsUrls?: string[];
  } = {},
): Promise<TestApp> {
  // One locked DuckDB instance per test file and set of readable directories (instances are
  // heavy); the file's afterAll closes them, so a worker running many files does not pile them up.
  const allowed = options.allowedDirectories ?? [root];
  const key = JSON.stringify(allowed);
  let locked = lockedEngines.get(key);
  if (locked === undefined) {
    locked = LakeQueryEngine.create({ locked: true, allowedDirectories: allowed, threads: 2, memoryLimit: '512MB' });
    lockedEngines.set(key, locked);
  }
  const engine = await locked;
  const lake = new LakeAdapter({ tables, storageFor: options.storageFor ?? ((t) => new LocalStorage(path.join(root, t))), engine });
  const tracker = new SnapshotTracker(lake, options.refreshMs ?? 0);
  if (options.warm) {
    const failed = await tracker.warm(tables, 20_000);
    if (failed.length > 0) throw new Error(`warming the snapshots failed: ${JSON.stringify(failed)}`);
  }
  const service = new QueryService(
    lake,
    tracker,
    new ResultCache(options.cacheEntries ?? 100, 16 * 1024 * 1024),
    new Limiter(options.maxConcurrent ?? 4, options.maxQueued ?? 64, 5000),
    {
      maxRows: options.maxRows ?? 10_000,
      queryTimeoutMs: options.queryTimeoutMs ?? 20_000,
      waitTimeoutMs: options.waitTimeoutMs ?? 5_000,
      eventTimeColumn: 'event_time',
      onAnswer: options.telemetry ? (f) => options.telemetry!.metrics.tableVersion.set(f.version, { table: f.table }) : undefined,
    },
  );
  const app = await buildApp({
    service,
    auth: new TokenAuth([{ name: 'test', token: TOKEN, tables: ['*'] }]),
    lookups: {
      silver_orders: {
        keyColumns: ['order_id'],
        separator: KEY_SEPARATOR,
        bucket: { column: 'bucket', bucketOf: (k) => bucketOf(k, BUCKETS) },
        cluster: { column: KEY_HASH_COLUMN, hashOf: keyHashOf },
      },
    },
    dashboard: {
      assetsDir: path.join(__dirname, '..', 'src', 'dashboard'),
      refreshMs: 1000,
      interval: '1m',
      buckets: 60,
      freshnessTables: [],
      ...options.dashboard,
    },
    dlqMetrics: options.dlqMetricsUrls ? new DlqMetricsSource(options.dlqMetricsUrls) : undefined,
    isReady: () => true,
    onResponse: options.telemetry ? httpMetricsHook(options.telemetry.metrics) : undefined,
    bodyLimit: 256 * 1024,
  });
  return { app, service, close: () => app.close() };
}

/** POST a JSON query; returns status and parsed body. */
export async function query(app: FastifyInstance, table: string, body: unknown) {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/tables/${table}/query`,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

export async function get(app: FastifyInstance, url: string) {
  const res = await app.inject({ url, headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.statusCode, body: res.json() };
}
