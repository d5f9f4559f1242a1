import { type ConfigOf, int, json, list, loadConfig, oneOf, setTogether, str, bool, url, urls } from '@sluice/config';
import { CONTRACTS } from '@sluice/contracts';
import { telemetryConfigFields } from '@sluice/telemetry';
import { MAX_TOKEN_LENGTH, type TokenGrant } from './auth/tokens';

/** A token as `Authorization: Bearer …` carries it (visible ASCII, at most what auth/tokens.ts reads). */
const TOKEN_PATTERN = new RegExp(`^[\\x21-\\x7e]{16,${MAX_TOKEN_LENGTH}}$`);
const GRANT_FIELDS = new Set(['name', 'token', 'tables']);

/**
 * Problems of QUERY_API_TOKENS, by entry index only: the messages are shown though the field is
 * secret, so they quote nothing from it (a name and a token swapped would put the token in a
 * quoted name).
 */
function checkTokens(v: unknown): string | undefined {
  if (!Array.isArray(v) || v.length === 0) return 'must be a non-empty JSON array of {name, token, tables}';
  /** Entry index by name and by token: two grants with one token would answer with whichever comes first. */
  const names = new Map<string, number>();
  const tokens = new Map<string, number>();
  for (const [i, g] of v.entries()) {
    if (!g || typeof g !== 'object' || Array.isArray(g)) return `entry ${i} must be an object`;
    const unknown = Object.keys(g).filter((k) => !GRANT_FIELDS.has(k));
    if (unknown.length > 0) return `entry ${i} has ${unknown.length} unknown field(s); the fields are ${[...GRANT_FIELDS].join(', ')}`;
    const { name, token, tables } = g as Record<string, unknown>;
    if (typeof name !== 'string' || name.length === 0) return `entry ${i} needs a name`;
    if (names.has(name)) return `entry ${i} has the name of entry ${String(names.get(name))}`;
    names.set(name, i);
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) {
      return `entry ${i} needs a token of 16 to 512 visible ASCII characters`;
    }
    if (tokens.has(token)) return `entry ${i} has the token of entry ${String(tokens.get(token))}`;
    tokens.set(token, i);
    if (!Array.isArray(tables) || tables.length === 0 || !tables.every((t) => typeof t === 'string' && t.length > 0)) {
      return `entry ${i} needs a non-empty tables list ("*" for all)`;
    }
  }
  return undefined;
}

/** Every bronze, silver and gold table the contracts define. */
function defaultTables(): string[] {
  return Object.values(CONTRACTS).flatMap((c) => [c.tables.bronze, c.tables.silver, ...c.aggregates.map((a) => a.table)]);
}

/** Environment of query-api; loaded once at start, every problem reported at once. */
export const configSchema = {
  host: str('QUERY_API_HOST', { default: '127.0.0.1', doc: 'listen address' }),
  port: int('QUERY_API_PORT', { default: 8083, min: 0, max: 65535 }),
  lakeRoot: str('QUERY_API_LAKE_ROOT', { doc: 'directory holding the tables, or s3://bucket/prefix' }),
  tables: list('QUERY_API_TABLES', { default: defaultTables(), doc: 'table names to serve (directories under the lake root)' }),
  tokens: json<TokenGrant[]>('QUERY_API_TOKENS', checkTokens, {
    secret: true,
    doc: 'JSON [{"name":"dash","token":"…","tables":["orders_silver"]}]',
  }),
  s3Endpoint: url('QUERY_API_S3_ENDPOINT', { default: '', allowEmpty: true, doc: 'S3-compatible endpoint, http(s) URL without credentials (empty: AWS)' }),
  s3Region: str('QUERY_API_S3_REGION', { default: 'us-east-1' }),
  s3AccessKeyId: str('QUERY_API_S3_ACCESS_KEY_ID', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true }),
  s3SecretAccessKey: str('QUERY_API_S3_SECRET_ACCESS_KEY', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true }),
  cacheDir: str('QUERY_API_CACHE_DIR', { default: '/tmp/sluice-query-api-cache', doc: 'local copies of S3 files' }),
  s3CacheBytesPerTable: int('QUERY_API_S3_CACHE_BYTES_PER_TABLE', { default: 2 * 1024 ** 3, min: 1024 * 1024, doc: 'bound of the local S3 file cache per table' }),
  maxRows: int('QUERY_API_MAX_ROWS', { default: 10_000, min: 1, max: 1_000_000 }),
  queryTimeoutMs: int('QUERY_API_QUERY_TIMEOUT_MS', { default: 10_000, min: 10, max: 600_000 }),
  maxConcurrent: int('QUERY_API_MAX_CONCURRENT', { default: 4, min: 1, max: 256 }),
  maxQueued: int('QUERY_API_MAX_QUEUED', { default: 64, min: 0, max: 10_000 }),
  queueWaitMs: int('QUERY_API_QUEUE_WAIT_MS', { default: 2_000, min: 0, max: 60_000 }),
  waitTimeoutMs: int('QUERY_API_WAIT_TIMEOUT_MS', { default: 5_000, min: 0, max: 60_000, doc: 'default read-your-writes wait' }),
  cacheEntries: int('QUERY_API_CACHE_ENTRIES', { default: 2_000, min: 0, max: 1_000_000 }),
  cacheBytes: int('QUERY_API_CACHE_BYTES', { default: 64 * 1024 * 1024, min: 0 }),
  snapshotRefreshMs: int('QUERY_API_SNAPSHOT_REFRESH_MS', { default: 250, min: 0, max: 60_000 }),
  eventTimeColumn: str('QUERY_API_EVENT_TIME_COLUMN', { default: 'event_time' }),
  bodyLimit: int('QUERY_API_BODY_LIMIT_BYTES', { default: 256 * 1024, min: 1024, max: 16 * 1024 * 1024 }),
  duckdbThreads: int('QUERY_API_DUCKDB_THREADS', { default: 2, min: 1, max: 64 }),
  duckdbMemoryMb: int('QUERY_API_DUCKDB_MEMORY_MB', { default: 1024, min: 64 }),
  duckdbFileCache: bool('QUERY_API_DUCKDB_FILE_CACHE', {
    default: false,
    doc: "DuckDB's external file cache (blocks of the data files it read, kept inside QUERY_API_DUCKDB_MEMORY_MB); off: no faster at 10M rows, ~90 MB more RSS (docs/bench/query-api.md)",
  }),
  duckdbSpillDir: str('QUERY_API_DUCKDB_SPILL_DIR', {
    default: '/tmp/sluice-query-api-spill',
    doc: "where DuckDB spills what exceeds QUERY_API_DUCKDB_MEMORY_MB (its default, .tmp under the working directory, is read-only in the image), in a subdirectory per process (those of killed processes are removed at start: do not share it with other containers or hosts)",
  }),
  duckdbSpillMb: int('QUERY_API_DUCKDB_SPILL_MB', { default: 256, min: 1, doc: 'the most DuckDB spills, MiB: below the size of the volume under QUERY_API_DUCKDB_SPILL_DIR' }),
  // At least a second: 0 made SIGTERM a hard exit at once, cutting every in-flight request.
  shutdownTimeoutMs: int('QUERY_API_SHUTDOWN_TIMEOUT_MS', { default: 10_000, min: 1_000, max: 120_000 }),
  dashboardRefreshMs: int('QUERY_API_DASHBOARD_REFRESH_MS', { default: 5_000, min: 250, max: 600_000 }),
  dashboardInterval: oneOf('QUERY_API_DASHBOARD_INTERVAL', ['10s', '1m', '5m', '15m', '1h'] as const, { default: '1m' }),
  dashboardBuckets: int('QUERY_API_DASHBOARD_BUCKETS', { default: 60, min: 1, max: 1000 }),
  dashboardOrdersTable: str('QUERY_API_DASHBOARD_ORDERS_TABLE', { default: CONTRACTS.orders.tables.silver }),
  dashboardThroughputTable: str('QUERY_API_DASHBOARD_THROUGHPUT_TABLE', { default: CONTRACTS.orders.tables.bronze }),
  dlqMetricsUrls: urls('QUERY_API_DLQ_METRICS_URLS', { default: [], doc: 'comma-separated validate ops /metrics URLs (DLQ panel), http(s) without credentials, each once' }),
  ...telemetryConfigFields,
};

/** The loaded configuration. */
export type QueryApiConfig = ConfigOf<typeof configSchema>;

/** query-api's own variable prefixes: a set variable under them that no field reads is reported. */
export const QUERY_API_CONFIG_PREFIXES = ['QUERY_API_'] as const;

/** Reads and freezes the configuration from `env`; throws CONFIG_INVALID listing every problem. */
export function loadQueryApiConfig(env: Record<string, string | undefined>): QueryApiConfig {
  return loadConfig(configSchema, env, { checks: [setTogether(configSchema, 's3AccessKeyId', 's3SecretAccessKey')], prefixes: QUERY_API_CONFIG_PREFIXES });
}
