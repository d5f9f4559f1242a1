import * as path from 'node:path';
import { describeConfig, warnIgnoredSettings } from '@sluice/config';
import { CONTRACTS, KEY_HASH_COLUMN, KEY_SEPARATOR, bucketOf, keyHashOf } from '@sluice/contracts';
import { LakeQueryEngine, PINNED_OVERSHOOT, claimScratchDir, isS3Root, tableStorageFactory } from '@sluice/lake';
import { createTelemetry, hardExit, httpMetricsHook, startOpsServer, telemetryOptionsFromConfig } from '@sluice/telemetry';
import { buildApp } from './app';
import { TokenAuth } from './auth/tokens';
import { ResultCache } from './cache/result-cache';
import { type QueryApiConfig, configSchema, loadQueryApiConfig, QUERY_API_CONFIG_PREFIXES } from './config';
import { LakeAdapter } from './lake/lake-adapter';
import { SnapshotTracker } from './lake/snapshots';
import { DlqMetricsSource } from './pipeline/dlq-metrics';
import { Limiter } from './limits/limiter';
import { type EntityLookup, QueryService } from './query/query-service';
import { servedMetrics } from './query/served-metrics';

/** Longest wait for the tables' first snapshots before /readyz turns ready. */
const WARM_UP_MS = 20_000;

// The only module that touches process: config from env, wiring, signals.
async function main(): Promise<void> {
  const config = loadQueryApiConfig(process.env);
  const telemetry = createTelemetry({ service: 'query-api', ...telemetryOptionsFromConfig(config) });
  const log = telemetry.logger;
  log.info({ config: describeConfig(configSchema, config) }, 'query-api starting');
  warnIgnoredSettings(log, 'query-api', configSchema, process.env, QUERY_API_CONFIG_PREFIXES);

  const s3 = isS3Root(config.lakeRoot);
  // This process's own spill directory; those of processes killed before DuckDB cleaned up go.
  // Spilling is rare here: a directory that cannot be claimed is reported, and DuckDB given the
  // configured one as before (it fails a query only if it has to spill).
  const spillDir = await claimScratchDir(config.duckdbSpillDir).then(
    (spill) => {
      if (spill.swept.dirs > 0) log.info({ swept: spill.swept, spillDir: spill.dir }, 'removed the DuckDB spill files of processes that were killed before they cleaned up');
      if (spill.failed.length > 0) log.warn({ failed: spill.failed }, 'could not remove the DuckDB spill files of processes that are gone; left in place');
      return spill.dir;
    },
    (err: unknown) => {
      log.warn({ err, spillDir: config.duckdbSpillDir }, 'could not set up the DuckDB spill directory; queries that spill will fail');
      return config.duckdbSpillDir;
    },
  );
  const engine = await LakeQueryEngine.create({
    locked: true,
    // DuckDB may read the lake directory (or, for S3, the local file cache) and nothing else.
    allowedDirectories: [s3 ? config.cacheDir : path.resolve(config.lakeRoot)],
    threads: config.duckdbThreads,
    memoryLimit: `${config.duckdbMemoryMb}MB`,
    externalFileCache: config.duckdbFileCache,
    tempDirectory: spillDir,
    maxTempDirectoryMb: config.duckdbSpillMb,
  });
  // An S3 table is read through its bounded file cache, which can pin at most PINNED_OVERSHOOT
  // times its size: the reads running take that less half the cache's size, which is left for the
  // checkpoint reads of reloads beside them (pinned in the same cache, outside the budget).
  const maxReadBytes = s3 ? Math.floor(config.s3CacheBytesPerTable * (PINNED_OVERSHOOT - 0.5)) : undefined;
  const lake = new LakeAdapter({ tables: config.tables, storageFor: storageFactory(config), engine, maxReadBytes });
  const snapshots = new SnapshotTracker(lake, config.snapshotRefreshMs);
  const service = new QueryService(
    lake,
    snapshots,
    new ResultCache(config.cacheEntries, config.cacheBytes),
    new Limiter(config.maxConcurrent, config.maxQueued, config.queueWaitMs),
    {
      maxRows: config.maxRows,
      queryTimeoutMs: config.queryTimeoutMs,
      waitTimeoutMs: config.waitTimeoutMs,
      eventTimeColumn: config.eventTimeColumn,
      onAnswer: servedMetrics(telemetry.metrics),
    },
  );

  const dlqUrls = config.dlqMetricsUrls;
  let ready = false;
  let stopping = false;
  const app = await buildApp({
    service,
    auth: new TokenAuth(config.tokens),
    lookups: contractLookups(),
    dashboard: {
      assetsDir: path.join(__dirname, 'dashboard'),
      refreshMs: config.dashboardRefreshMs,
      interval: config.dashboardInterval,
      buckets: config.dashboardBuckets,
      freshnessTables: [],
      throughput: { table: config.dashboardThroughputTable, timeColumn: 'event_time' },
      orders: { table: config.dashboardOrdersTable, statusColumn: 'status', timeColumn: 'event_time' },
      dlqMetrics: dlqUrls.length > 0,
    },
    dlqMetrics: dlqUrls.length > 0 ? new DlqMetricsSource(dlqUrls) : undefined,
    isReady: () => ready,
    isDraining: () => stopping,
    onResponse: httpMetricsHook(telemetry.metrics),
    bodyLimit: config.bodyLimit,
    logger: log,
  });
  const address = await app.listen({ host: config.host, port: config.port });
  // /metrics on its own port, never on the API port that dashboards reach through the load balancer.
  const ops = await startOpsServer({ host: config.opsHost, port: config.opsPort, metricsText: () => telemetry.metricsText(), ready: () => ready });
  log.info({ address, opsPort: ops.port, tables: config.tables }, 'query-api listening; loading the tables before ready');

  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    ready = false; // /readyz turns 503 so the load balancer stops sending new requests
    log.info({ signal }, 'query-api draining');
    // Not unref'd: a drain waiting on a promise no handle keeps alive would let Node exit 0 quietly.
    setTimeout(() => {
      log.error('shutdown timed out');
      // Not process.exit: a DuckDB call still running on a worker thread can hold a normal exit.
      hardExit(telemetry);
    }, config.shutdownTimeoutMs);
    // fastify.close() stops accepting and waits for in-flight requests.
    app
      .close()
      .then(() => lake.close())
      .then(() => engine.close())
      .then(() => ops.close())
      .then(() => telemetry.shutdown())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // /healthz answers while the tables load; /readyz only once they are loaded (or have failed),
  // unless a signal came first. The handlers above are in place already: a pod deleted while it
  // warms up drains like any other.
  const notLoaded = await snapshots.warm(config.tables, WARM_UP_MS);
  if (notLoaded.length > 0) log.warn({ tables: notLoaded }, 'tables not loaded before taking traffic; requests load them');
  if (stopping) return;
  ready = true;
  log.info({ notLoaded: notLoaded.length }, 'query-api ready');
}

function storageFactory(config: QueryApiConfig) {
  return tableStorageFactory(config.lakeRoot, {
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    credentials: config.s3AccessKeyId ? { accessKeyId: config.s3AccessKeyId, secretAccessKey: config.s3SecretAccessKey } : undefined,
    cacheDir: config.cacheDir,
    cacheBytesPerTable: config.s3CacheBytesPerTable,
  });
}

/** Entity lookups for every state contract's silver table, bucketed as merge-compaction writes it. */
function contractLookups(): Record<string, EntityLookup> {
  const out: Record<string, EntityLookup> = {};
  for (const c of Object.values(CONTRACTS)) {
    if (c.kind !== 'state') continue;
    out[c.tables.silver] = {
      keyColumns: [...c.keyFields],
      separator: KEY_SEPARATOR,
      bucket: { column: 'bucket', bucketOf: (key) => bucketOf(key, c.buckets) },
      cluster: { column: KEY_HASH_COLUMN, hashOf: keyHashOf },
    };
  }
  return out;
}

main().catch((err: unknown) => {
  // Config errors list every problem; print them plainly, then fail.
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
