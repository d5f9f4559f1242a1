import * as os from 'node:os';
import * as path from 'node:path';
import { STALL_TO_POLL_INTERVAL_MS } from '@sluice/config';
import { AvroDecoder, CONTRACTS, DLQ_TOPIC, contractByName, validTopicName, type AnyContract } from '@sluice/contracts';
import { BatchConsumer, KafkaAdmin, KafkaProducer, kafkaConnectionFromConfig } from '@sluice/kafka';
import { LakeQueryEngine, PINNED_OVERSHOOT, claimScratchDir, configureSharedDuckDB, isS3Root, sharedDuckDBMemoryBytes, tableStorageFactory } from '@sluice/lake';
import { startOpsServer, type Logger, type OpsServer, type SluiceMetrics } from '@sluice/telemetry';
import { CompactionWorker } from './compaction/compaction-worker';
import type { MaintenanceOptions } from './compaction/maintenance';
import { type MergeConfig, duckdbMemoryMbFor } from './config';
import { mergeError } from './errors';
import { TableSet, type StorageFactory } from './tables/table-set';
import { AssignmentWatch, type AssignmentSource } from './tier1/assignment-watch';
import { RECORD_BASE_BYTES } from './tier1/bronze-record';
import { DeadLetters, type DeadLetterSink } from './tier1/dead-letters';
import { LakeBronzeStore } from './tier1/lake-bronze-store';
import type { Tier1Tracer } from './tier1/trace';
import { Tier1Worker, type Tier1ConsumerFactory } from './tier1/tier1-worker';
import { BronzeWatch } from './tier2/bronze-watch';
import { Tier2Worker } from './tier2/tier2-worker';

/**
 * Most records one tier-1 poll takes. Draining a backlog, polls of 1,000 against 10,000 used
 * 5-14 % less CPU per event and peaked 42-61 MB lower (docs/bench/merge.md, 2026-12-05 14:21):
 * presumably the records of a large poll and their Buffers outlive V8's young generation.
 */
const TIER1_POLL_MESSAGES = 1_000;

/**
 * Longest a tier-1 poll waits for records. A batch falls due while a poll waits, and closes when
 * it returns: a poll of 100 ms closed batches up to 100 ms after their time bound at rates where
 * polls end on the wait rather than on the count.
 */
const TIER1_POLL_WAIT_MS = 20;

/** What {@link build} needs; everything but config and telemetry has a production default. */
export interface MergeDeps {
  readonly config: MergeConfig;
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
  /** Renders /metrics. */
  readonly metricsText: () => Promise<string>;
  /** Spans for sampled records (tier 1 `merge.bronze-append`); none without it. */
  readonly tracer?: Tier1Tracer;
  /** Storage of a table by name; default a local directory under SLUICE_LAKE_ROOT. Tests wrap it. */
  readonly storageFor?: StorageFactory;
  /** Tier-1 consumer; default a libs/kafka BatchConsumer on the valid topics (read_committed). */
  readonly createConsumer?: Tier1ConsumerFactory;
  /** Who holds the valid topics' partitions, for tier 1's group watch; default a libs/kafka admin client. */
  readonly assignmentSource?: AssignmentSource;
  /** Where tier 1's DLQ records go; default a libs/kafka idempotent producer on the brokers. */
  readonly deadLetterSink?: DeadLetterSink;
  /** Query engine for reading bronze; default the lake's shared DuckDB instance. */
  readonly engine?: LakeQueryEngine;
  /** The container's memory limit (cgroup), which bounds DuckDB when SLUICE_DUCKDB_MEMORY_MB is 0. */
  readonly containerMemoryBytes?: number;
}

/** A built, not yet started merge-compaction process. */
export interface MergeApp {
  readonly tier1: Tier1Worker | undefined;
  readonly tier2: Tier2Worker | undefined;
  readonly compaction: CompactionWorker | undefined;
  readonly tables: TableSet;
  readonly contracts: readonly AnyContract[];
  /** Starts the roles and the ops server; resolves when all are running. */
  start(): Promise<void>;
  /** Graceful stop: every role finishes or abandons its in-flight step safely. Idempotent. */
  stop(): Promise<void>;
  /** /healthz. */
  live(): boolean;
  /** /readyz. */
  ready(): boolean;
  /** Port of the ops server once started. */
  readonly opsPort: number | undefined;
}

/** The contracts named in config (all when none), failing on unknown names. */
export function selectContracts(names: readonly string[]): AnyContract[] {
  if (names.length === 0) return Object.values(CONTRACTS);
  return names.map((n) => {
    const c = contractByName(n);
    if (!c) throw mergeError('MERGE_CONTRACT_UNKNOWN', `SLUICE_CONTRACTS names unknown contract ${JSON.stringify(n)}`);
    return c;
  });
}

/** Wires the roles chosen by SLUICE_ROLES. Pure wiring: nothing runs until `start()`. */
export async function build(deps: MergeDeps): Promise<MergeApp> {
  const { config, logger, metrics } = deps;
  const contracts = selectContracts(config.contracts);
  const topicOf = (c: AnyContract) => `${config.topicPrefix}${validTopicName(c.name)}`;
  const storageFor: StorageFactory =
    deps.storageFor ??
    tableStorageFactory(config.lakeRoot, {
      endpoint: config.s3Endpoint,
      region: config.s3Region,
      credentials: config.s3AccessKeyId ? { accessKeyId: config.s3AccessKeyId, secretAccessKey: config.s3SecretAccessKey } : undefined,
      commitMode: config.s3CommitMode,
      cacheDir: config.s3CacheDir,
      cacheBytesPerTable: config.s3CacheBytesPerTable,
    });
  // This process's own scratch directory; those of processes killed before they cleaned up go.
  const scratch = await claimScratchDir(config.scratchDir || path.join(os.tmpdir(), 'sluice-scratch'));
  if (scratch.swept.dirs > 0) logger.info({ swept: scratch.swept, scratchDir: scratch.dir }, 'removed the scratch files of processes that were killed before they cleaned up');
  if (scratch.failed.length > 0) logger.warn({ failed: scratch.failed }, 'could not remove the scratch files of processes that are gone; left in place');
  const tables = new TableSet({
    storageFor,
    tablePrefix: config.tablePrefix,
    scratchDir: scratch.dir,
    compactionStats: { smallFileBytes: config.compactionSmallFileBytes, minSmallFiles: config.compactionMinFiles },
    keepTombstonesMs: config.vacuumRetentionMs,
  });
  // One DuckDB instance writes and reads every table of this process; bound it like the pod.
  await configureSharedDuckDB({
    memoryLimitMb: duckdbMemoryMbFor(config.duckdbMemoryMb, deps.containerMemoryBytes),
    threads: config.duckdbThreads || undefined,
    tempDirectory: path.join(scratch.dir, 'duckdb-spill'),
    maxSpillMb: config.duckdbSpillMb || undefined,
  });
  const engine = deps.engine ?? (await LakeQueryEngine.create());
  // An S3 table is read through its bounded file cache, which pins at most PINNED_OVERSHOOT times
  // its size: reads of bronze history go in chunks of half the cache, so that tier 1's dedup
  // rebuild, tier 2's tombstone rebuild and a fold step (all at once after a start) fit beside
  // each other in one process's bronze cache.
  const maxReadBytes = isS3Root(config.lakeRoot) ? Math.floor(config.s3CacheBytesPerTable / PINNED_OVERSHOOT) : Infinity;
  const maintenance: MaintenanceOptions = {
    minSmallFiles: config.compactionMinFiles,
    smallFileBytes: config.compactionSmallFileBytes,
    targetFileBytes: config.compactionTargetFileBytes,
    retentionMs: config.vacuumRetentionMs,
    vacuum: config.vacuum,
    logger,
    metrics,
  };

  let tier1: Tier1Worker | undefined;
  let dlqProducer: KafkaProducer | undefined;
  let admin: KafkaAdmin | undefined;
  if (config.roles.has('tier1')) {
    const kafka = kafkaConnectionFromConfig(config);
    if (deps.deadLetterSink === undefined) dlqProducer = new KafkaProducer({ ...kafka, clientId: 'sluice-merge-compaction-dlq' });
    const sink: DeadLetterSink = deps.deadLetterSink ?? ((records) => (dlqProducer as KafkaProducer).sendBatch(records));
    const topics = contracts.map(topicOf);
    const createConsumer: Tier1ConsumerFactory =
      deps.createConsumer ??
      ((hooks) =>
        new BatchConsumer({
          ...kafka,
          clientId: 'sluice-merge-compaction',
          groupId: config.groupId,
          topics,
          isolationLevel: 'read_committed',
          autoOffsetReset: 'earliest',
          // One poll adds at most ~1/4 of the memory bound in Avro bytes, and as many records as
          // a quarter holds at their least counted size (heldBytesOf): a poll of small records
          // holds several times its wire size. And at most TIER1_POLL_MESSAGES: the batch is
          // made of many polls either way.
          maxBatchMessages: Math.min(TIER1_POLL_MESSAGES, config.batchMaxEvents, Math.max(1, Math.floor(config.maxBufferedBytes / 4 / RECORD_BASE_BYTES))),
          maxBatchBytes: Math.floor(config.maxBufferedBytes / 4),
          maxBatchWaitMs: Math.min(TIER1_POLL_WAIT_MS, config.batchMaxMs),
          // A poll (with its hooks) past the stall limit ends the process, so polls are at most
          // that far apart. Also the rebalance timeout: how long a join can wait for a member that
          // died with the broker, so it follows the stall limit rather than the 300 s default.
          maxPollIntervalMs: config.stallTimeoutMs + STALL_TO_POLL_INTERVAL_MS,
          // librdkafka's prefetch queue: the consumer's one queue (not one per partition), Avro
          // bytes outside the heap, which a fetch response may overshoot; at least 1 MiB.
          maxPrefetchKbytes: Math.max(1024, Math.floor(config.maxBufferedBytes / 2 / 1024 / Math.max(1, topics.length * 8))),
          ...hooks,
        }));
    if (deps.assignmentSource === undefined) admin = new KafkaAdmin({ ...kafka, clientId: 'sluice-merge-compaction-watch' });
    const assignmentWatch = new AssignmentWatch({
      source: deps.assignmentSource ?? (admin as KafkaAdmin),
      groupId: config.groupId,
      topics,
      onSampleFailed: (err) => logger.warn({ code: (err as { code?: string }).code, message: (err as Error).message }, 'group watch could not read the group; its window starts again'),
    });
    tier1 = new Tier1Worker({
      contracts,
      contractOfTopic: new Map(contracts.map((c) => [topicOf(c), c])),
      decoder: new AvroDecoder(contracts),
      store: new LakeBronzeStore(tables, engine, Date.now, maxReadBytes),
      deadLetters: new DeadLetters(sink, config.dlqTopic || `${config.topicPrefix}${DLQ_TOPIC.name}`),
      createConsumer,
      bounds: { maxMs: config.batchMaxMs, maxBytes: config.batchMaxBytes, maxRecords: config.batchMaxEvents },
      maxBufferedBytes: config.maxBufferedBytes,
      dedupWatermarkMs: config.dedupWatermarkMs,
      dedupMaxIds: config.dedupMaxIds,
      retryMaxMs: config.retryMaxMs,
      stallTimeoutMs: config.stallTimeoutMs,
      groupWatch: { watch: assignmentWatch, windowMs: config.assignmentWindowMs },
      logger: logger.child({ role: 'tier1' }),
      metrics,
      tableName: (table) => tables.name(table),
      tracer: deps.tracer,
      // With tier 2 in this process, a bronze commit starts its fold at once (tier2 is built below).
      onCommitted: () => tier2?.wake(),
    });
  }
  const tier2 = config.roles.has('tier2')
    ? new Tier2Worker({
        contracts: contracts.map((contract) => ({ contract, topic: topicOf(contract) })),
        tables,
        engine,
        intervalMs: config.mergeIntervalMs,
        maxRows: config.mergeMaxRows,
        foldPercent: config.silverFoldPercent,
        goldIntervalMs: config.goldIntervalMs,
        watermarkMs: config.dedupWatermarkMs,
        maxReadBytes,
        retryMaxMs: config.retryMaxMs,
        stallTimeoutMs: config.jobStallTimeoutMs,
        maintenance: { ...maintenance, vacuum: false, intervalMs: config.compactionIntervalMs },
        logger: logger.child({ role: 'tier2' }),
        metrics,
      })
    : undefined;
  // Without tier 1 here (the split deployment), tier 2 learns of bronze commits by looking.
  const bronzeWatch =
    tier2 !== undefined && tier1 === undefined && config.bronzeWatchMs > 0
      ? new BronzeWatch({
          tables,
          bronzeTables: contracts.map((contract) => contract.tables.bronze),
          intervalMs: config.bronzeWatchMs,
          onCommit: () => tier2.wake(),
          logger: logger.child({ role: 'tier2' }),
          retryMaxMs: config.retryMaxMs,
        })
      : undefined;
  const compaction = config.roles.has('compaction')
    ? new CompactionWorker({
        contracts,
        tables,
        intervalMs: config.compactionIntervalMs,
        retryMaxMs: config.retryMaxMs,
        stallTimeoutMs: config.jobStallTimeoutMs,
        maintenance: { ...maintenance, dutyPercent: config.compactionDutyPercent },
        vacuumDerived: true,
        vacuumIntervalMs: config.vacuumIntervalMs,
        logger: logger.child({ role: 'compaction' }),
      })
    : undefined;

  let ops: OpsServer | undefined;
  let started = false;
  let stopping: Promise<void> | undefined;
  const app: MergeApp = {
    tier1,
    tier2,
    compaction,
    tables,
    contracts,
    get opsPort() {
      return ops?.port;
    },
    live: () => (tier1?.live ?? true) && (tier2?.live ?? true) && (compaction?.live ?? true),
    ready: () => started && stopping === undefined && (tier1?.ready ?? true) && (tier2?.healthy ?? true),
    async start() {
      ops = await startOpsServer({ port: config.opsPort, host: config.opsHost, metricsText: () => metricsWithDuckDB(deps), live: () => app.live(), ready: () => app.ready() });
      await dlqProducer?.connect();
      await tier1?.start();
      // Stopped while tier 1 waited for its storage: nothing more is started.
      if (stopping !== undefined) return;
      tier2?.start();
      bronzeWatch?.start();
      compaction?.start();
      started = true;
      logger.info({ roles: [...config.roles], contracts: contracts.map((c) => c.name), opsPort: ops.port }, 'merge-compaction started');
    },
    stop() {
      stopping ??= (async () => {
        await Promise.all([bronzeWatch?.stop(), tier1?.stop(), tier2?.stop(), compaction?.stop()]);
        await dlqProducer?.close().catch((err: unknown) => logger.warn({ err }, 'DLQ producer close failed'));
        await admin?.close().catch((err: unknown) => logger.warn({ err }, 'admin client close failed'));
        await ops?.close();
        // An engine the caller passed in is the caller's to close.
        if (deps.engine === undefined) engine.close();
        logger.info('merge-compaction stopped');
      })();
      return stopping;
    },
  };
  return app;
}

/** Longest a scrape waits for DuckDB's memory before answering with the last value. */
const DUCKDB_MEMORY_READ_MS = 2_000;

/**
 * The metrics exposition with DuckDB's memory read at scrape time (`process_memory{kind="duckdb"}`).
 * A failed or slow read leaves that series at its last value rather than failing or holding the
 * scrape: the read is a DuckDB query, which queues behind long MERGEs and compactions on the
 * thread pool, exactly when the other metrics matter (a slow read still lands when it finishes).
 */
async function metricsWithDuckDB(deps: MergeDeps): Promise<string> {
  const read = sharedDuckDBMemoryBytes().then(
    (bytes) => deps.metrics.processMemory.set(bytes, { kind: 'duckdb' }),
    (err: unknown) => deps.logger.debug({ err }, 'DuckDB memory not read'),
  );
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([read, new Promise<void>((resolve) => (timer = setTimeout(resolve, DUCKDB_MEMORY_READ_MS)))]);
  clearTimeout(timer);
  return deps.metricsText();
}
