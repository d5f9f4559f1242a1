import { bool, int, list, loadConfig, url, MAX_POLL_INTERVAL_MS, oneOf, setTogether, STALL_TO_POLL_INTERVAL_MS, str, timerMs, type ConfigOf, type FieldSpec } from '@sluice/config';
import { MIN_VACUUM_RETENTION_MS } from '@sluice/lake';
import { KAFKA_SECURITY_PREFIXES, kafkaSecurityConfigFields } from '@sluice/kafka';
import { telemetryConfigFields } from '@sluice/telemetry';
import { parseRoles, ROLES, type Role } from './roles';

function roles(env: string): FieldSpec<ReadonlySet<Role>> {
  const items = list(env);
  return {
    env,
    secret: false,
    doc: `comma-separated subset of ${ROLES.join(',')}`,
    default: new Set(ROLES),
    parse(raw) {
      const parsed = items.parse(raw);
      return parsed.ok ? parseRoles(parsed.value) : parsed;
    },
  };
}

/**
 * Environment schema of merge-compaction; loaded once in main.ts. Durations are ms, sizes bytes.
 * Defaults are the embedded single-process setup on local disk.
 */
export const mergeConfigSchema = {
  roles: roles('SLUICE_ROLES'),
  brokers: list('SLUICE_KAFKA_BROKERS', { doc: 'bootstrap brokers host:port,...' }),
  groupId: str('SLUICE_MERGE_GROUP_ID', { default: 'sluice-merge-compaction', doc: 'tier-1 consumer group' }),
  contracts: list('SLUICE_CONTRACTS', { default: [], doc: 'contract names to serve; empty = every contract' }),
  dlqTopic: str('SLUICE_DLQ_TOPIC', {
    default: '',
    allowEmpty: true,
    doc: 'where tier 1 sends valid-topic records it cannot decode; empty = SLUICE_TOPIC_PREFIX + the contracts DLQ topic',
  }),
  topicPrefix: str('SLUICE_TOPIC_PREFIX', { default: '', allowEmpty: true, doc: 'prefix before the contracts topic names (tests, tenants)' }),
  lakeRoot: str('SLUICE_LAKE_ROOT', { default: '.sluice/lake', doc: 'directory holding the tables, or s3://bucket/prefix' }),
  s3Endpoint: url('SLUICE_S3_ENDPOINT', { default: '', allowEmpty: true, doc: 'S3-compatible endpoint for an s3:// lake root, http(s) URL without credentials (empty: AWS)' }),
  s3Region: str('SLUICE_S3_REGION', { default: 'us-east-1' }),
  s3AccessKeyId: str('SLUICE_S3_ACCESS_KEY_ID', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true, doc: 'empty: the AWS SDK default credential chain' }),
  s3SecretAccessKey: str('SLUICE_S3_SECRET_ACCESS_KEY', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true }),
  s3CommitMode: oneOf('SLUICE_S3_COMMIT_MODE', ['conditional-put', 'single-writer'], {
    default: 'conditional-put',
    doc: 'conditional-put: commits are PUT If-None-Match (needed with several tier-1 replicas); single-writer: one process writes each table',
  }),
  s3CacheDir: str('SLUICE_S3_CACHE_DIR', { default: '/tmp/sluice-merge-cache', doc: 'local copies of S3 data files DuckDB reads' }),
  s3CacheBytesPerTable: int('SLUICE_S3_CACHE_BYTES_PER_TABLE', { default: 1024 ** 3, min: 1024 * 1024, doc: 'bound of the local S3 file cache per table' }),
  tablePrefix: str('SLUICE_TABLE_PREFIX', { default: '', allowEmpty: true, doc: 'prefix before the contracts table names' }),
  batchMaxMs: timerMs('SLUICE_BATCH_MAX_MS', { default: 1000, min: 10, max: 600_000, doc: 'tier-1 micro-batch time bound' }),
  batchMaxBytes: int('SLUICE_BATCH_MAX_BYTES', { default: 64 * 1024 * 1024, min: 1024, doc: 'tier-1 micro-batch size bound: the heap its decoded records hold (Avro size + ~450 bytes each)' }),
  batchMaxEvents: int('SLUICE_BATCH_MAX_EVENTS', { default: 200_000, min: 1, doc: 'tier-1 micro-batch count bound' }),
  maxBufferedBytes: int('SLUICE_MAX_BUFFERED_BYTES', { default: 128 * 1024 * 1024, min: 4096, doc: 'pause consumption when the heap held by buffered records (the batch being written and the next) passes this' }),
  dedupWatermarkMs: int('SLUICE_DEDUP_WATERMARK_MS', { default: 10 * 60_000, min: 0, doc: 'event_id dedup horizon, by event time' }),
  dedupMaxIds: int('SLUICE_DEDUP_MAX_IDS', {
    default: 1_000_000,
    min: 1,
    doc: 'event ids the dedup windows hold in memory together (25-50 bytes each); older ids inside the watermark are looked up in bronze',
  }),
  mergeIntervalMs: timerMs('SLUICE_MERGE_INTERVAL_MS', { default: 1000, min: 10, doc: 'tier-2 fold cadence' }),
  bronzeWatchMs: timerMs('SLUICE_BRONZE_WATCH_MS', {
    default: 250,
    min: 0,
    doc: 'without tier 1 in the process: how often tier 2 looks for new bronze commits (one HEAD per bronze table) to fold them at once instead of at the next fold interval; 0 = only the fold cadence, else at least 50',
  }),
  silverFoldPercent: int('SLUICE_SILVER_FOLD_PERCENT', {
    default: 10,
    min: 0,
    max: 1000,
    doc: 'amortised MERGE (ADR 0001): fold a silver bucket when its pending tail reaches this % of its rows; 0 = copy-on-write every step',
  }),
  goldIntervalMs: timerMs('SLUICE_GOLD_INTERVAL_MS', { default: 5000, min: 0, doc: 'gold step cadence (per-minute windows need no sub-second refresh; keeps silver folds fast)' }),
  mergeMaxRows: int('SLUICE_MERGE_MAX_ROWS', { default: 100_000, min: 1, doc: 'bronze offsets one tier-2 step folds per contract, shared by the partitions behind (the step holds its rows in memory)' }),
  compactionIntervalMs: timerMs('SLUICE_COMPACTION_INTERVAL_MS', { default: 60_000, min: 10, doc: 'compaction cadence (vacuum at most every SLUICE_VACUUM_INTERVAL_MS)' }),
  compactionMinFiles: int('SLUICE_COMPACTION_MIN_FILES', { default: 8, min: 2, doc: 'small files in a partition before it is compacted' }),
  compactionSmallFileBytes: int('SLUICE_COMPACTION_SMALL_FILE_BYTES', { default: 32 * 1024 * 1024, min: 1, doc: 'a file below this is small' }),
  compactionTargetFileBytes: int('SLUICE_COMPACTION_TARGET_FILE_BYTES', { default: 128 * 1024 * 1024, min: 1024, doc: 'target size of compacted files' }),
  compactionDutyPercent: int('SLUICE_COMPACTION_DUTY_PERCENT', {
    default: 50,
    min: 1,
    max: 100,
    doc: 'share of time the compaction role works in a pass: after each partition it pauses (100/duty - 1)x as long as that partition took (at most 5 s), so a pass over many partitions leaves CPU and DuckDB threads to tier 1 and tier 2 between them; 100 = no pauses',
  }),
  // The retention must outlast the longest gap between writing a data file and committing it:
  // vacuum deletes unreferenced files older than the retention, and a file a writer has written
  // but not yet committed is unreferenced. With 0, vacuum deleted files a MERGE then committed.
  // It must also outlast the longest read of a pinned snapshot and a writer stuck until
  // SLUICE_STALL_TIMEOUT_MS (4 min) ends its process. The floor is libs/lake's (1 hour), which
  // vacuum itself enforces.
  vacuumRetentionMs: int('SLUICE_VACUUM_RETENTION_MS', {
    default: 7 * 24 * 3600_000,
    min: MIN_VACUUM_RETENTION_MS,
    doc: 'keep removed and unreferenced files this long (≥ 1 h, see config.ts)',
  }),
  vacuum: bool('SLUICE_VACUUM', { default: true, doc: 'run vacuum after compaction' }),
  vacuumIntervalMs: int('SLUICE_VACUUM_INTERVAL_MS', {
    default: 3_600_000,
    min: 0,
    doc: 'vacuum each table at most this often (a vacuum lists every data file of the table, against a retention of days); 0 = every compaction pass',
  }),
  retryMaxMs: timerMs('SLUICE_RETRY_MAX_MS', { default: 30_000, min: 10, doc: 'backoff ceiling for storage retries' }),
  stallTimeoutMs: timerMs('SLUICE_STALL_TIMEOUT_MS', {
    default: 240_000,
    min: 10_000,
    max: MAX_POLL_INTERVAL_MS - STALL_TO_POLL_INTERVAL_MS,
    doc: 'a tier-1 poll (with its rebalance hooks) or a step of its bronze write running longer than this is hung: /healthz fails and the process exits; the consumer max.poll.interval.ms is this + 30 s',
  }),
  jobStallTimeoutMs: timerMs('SLUICE_JOB_STALL_TIMEOUT_MS', {
    default: 30 * 60_000,
    min: 60_000,
    doc: 'a tier-2 pass (every contract\'s fold steps, each bounded by SLUICE_MERGE_MAX_ROWS, and a maintenance slice) running longer than this, or a compaction pass this long without compacting a partition, is hung (a storage or DuckDB call that never returns): /healthz fails and the process exits',
  }),
  assignmentWindowMs: timerMs('SLUICE_ASSIGNMENT_WINDOW_MS', {
    default: 120_000,
    min: 5_000,
    doc: 'how often a tier-1 worker that holds no partition asks the group who holds the valid topics: a partition with records that no member held at both ends of a window fails /healthz and ends the process (a wedged group join)',
  }),
  shutdownTimeoutMs: timerMs('SLUICE_SHUTDOWN_TIMEOUT_MS', { default: 20_000, min: 100 }),
  duckdbMemoryMb: int('SLUICE_DUCKDB_MEMORY_MB', {
    default: 0,
    min: 0,
    doc: "DuckDB memory_limit in MiB (0 = half the container's cgroup memory limit, or DuckDB's default of 80 % of the machine when there is none); beyond it DuckDB spills to SLUICE_SCRATCH_DIR or fails the step (retried)",
  }),
  duckdbSpillMb: int('SLUICE_DUCKDB_SPILL_MB', {
    default: 0,
    min: 0,
    doc: "the most DuckDB spills under SLUICE_SCRATCH_DIR, MiB (past it the step fails and is retried); 0 = DuckDB's default, 90 % of the disk's free space. Keep it under the scratch volume's size with room for the Parquet files staged there",
  }),
  duckdbThreads: int('SLUICE_DUCKDB_THREADS', { default: 0, min: 0, max: 256, doc: 'DuckDB threads; 0 = one per core' }),
  scratchDir: str('SLUICE_SCRATCH_DIR', { default: '', allowEmpty: true, doc: "local dir for DuckDB output before it moves into storage and for DuckDB's spill, in a subdirectory per process (those of killed processes are removed at start: do not share it with other containers or hosts); empty = sluice-scratch under OS temp" }),
  ...kafkaSecurityConfigFields,
  ...telemetryConfigFields,
};

/** Shortest SLUICE_BRONZE_WATCH_MS but 0 (off). */
export const MIN_BRONZE_WATCH_MS = 50;

/** The loaded, frozen merge-compaction configuration. */
export type MergeConfig = ConfigOf<typeof mergeConfigSchema>;

/** merge-compaction's own variable prefixes: a set variable under them that no field reads is reported. */
export const MERGE_CONFIG_PREFIXES = ['SLUICE_', ...KAFKA_SECURITY_PREFIXES] as const;

/** Reads and freezes the configuration from `env`; throws CONFIG_INVALID listing every problem. */
export function loadMergeConfig(env: Record<string, string | undefined>): MergeConfig {
  return loadConfig(mergeConfigSchema, env, {
    prefixes: MERGE_CONFIG_PREFIXES,
    checks: [
      setTogether(mergeConfigSchema, 's3AccessKeyId', 's3SecretAccessKey'),
      {
        // A look per table every few ms would be a HEAD storm on S3 for no fresher silver.
        fields: ['bronzeWatchMs'],
        problem: (c) => (c.bronzeWatchMs === 0 || c.bronzeWatchMs >= MIN_BRONZE_WATCH_MS ? undefined : `SLUICE_BRONZE_WATCH_MS must be 0 (off) or at least ${MIN_BRONZE_WATCH_MS}, got ${c.bronzeWatchMs}`),
      },
      {
        // Files between the two sizes would count as small yet never be compacted (they are
        // already at the target): the small-file gauges would stay high for good.
        fields: ['compactionSmallFileBytes', 'compactionTargetFileBytes'],
        problem: (c) =>
          c.compactionSmallFileBytes <= c.compactionTargetFileBytes
            ? undefined
            : `SLUICE_COMPACTION_SMALL_FILE_BYTES (${c.compactionSmallFileBytes}) must not exceed SLUICE_COMPACTION_TARGET_FILE_BYTES (${c.compactionTargetFileBytes})`,
      },
    ],
  });
}

/**
 * DuckDB's memory_limit in MiB: SLUICE_DUCKDB_MEMORY_MB when set, else half the container's
 * memory limit (DuckDB would otherwise take 80 % of the node's memory and get the pod OOM-killed),
 * else undefined: DuckDB's own default, for a process with the machine to itself.
 */
export function duckdbMemoryMbFor(configuredMb: number, containerLimitBytes: number | undefined): number | undefined {
  if (configuredMb > 0) return configuredMb;
  if (containerLimitBytes === undefined) return undefined;
  return Math.max(64, Math.floor(containerLimitBytes / 2 / 1024 ** 2));
}
