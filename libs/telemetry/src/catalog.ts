/**
 * The one catalog of every metric Sluice exposes. Alert rules, the Grafana dashboard, the
 * exposition checker and the instruments themselves are all derived from or checked against
 * this list, so a metric cannot be renamed in one place and forgotten in another.
 *
 * A Prometheus name is `sluice_<service>_<thing>_<unit>`; `<service>` is the service id with
 * `-` replaced by `_` (`merge-compaction` → `merge_compaction`).
 */

/** The four deployable services; the id is also the OpenTelemetry `service.name`. */
export const SERVICES = ['ingest', 'validate', 'merge-compaction', 'query-api'] as const;
/** One of {@link SERVICES}. */
export type ServiceId = (typeof SERVICES)[number];

/** Instrument kinds. A `gauge` holds the last value set per label set. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/** One catalog entry, before it is bound to a service. */
export interface MetricSpec {
  /** Middle part of the name, snake_case. */
  readonly thing: string;
  /** Last part of the name: `total` for counters, else the base unit (`seconds`, `files`, …). */
  readonly unit: string;
  readonly type: MetricType;
  /** Label names; each has a small closed or bounded value set (see `help`). */
  readonly labels: readonly string[];
  /** Services that emit this metric. */
  readonly services: readonly ServiceId[];
  readonly help: string;
  /** Histogram bucket upper bounds, in `unit`. */
  readonly buckets?: readonly number[];
}

const ALL = SERVICES;
const CONSUMERS = ['validate', 'merge-compaction'] as const;
const HTTP = ['ingest', 'query-api'] as const;
/** The services events flow through (query-api serves tables, not events). */
const PIPELINE = ['ingest', 'validate', 'merge-compaction'] as const;

/** Latency buckets in seconds: 1 ms … 60 s. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;
/** Freshness buckets in seconds: 0.5 s … 1 h (the SLO target lives in the alert rules). */
const FRESHNESS_BUCKETS = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600] as const;

/**
 * Every metric, keyed by the property name apps use (`telemetry.metrics.eventsIn`).
 * Label value sets: `outcome` is a short closed word per metric (listed in `help`); `topic`,
 * `table`, `contract` and `operation` are bounded by the contracts; `partition` is bounded by the
 * topic's partition count; `route` is the route pattern, never the raw URL.
 */
export const METRICS = {
  eventsIn: {
    thing: 'events_in',
    unit: 'total',
    type: 'counter',
    labels: ['outcome'],
    services: PIPELINE,
    help: 'Events received (HTTP for ingest, consumed records otherwise); outcome: accepted|rejected|throttled|unavailable|refused|consumed|below_offset (ingest: throttled = producer queue full, unavailable = Kafka failed the publish, refused = the topic refused an event as too large; merge-compaction: consumed counts a record once while its partition stays assigned, not again when a failing contract\'s rewind reads it again; below_offset = skipped, below bronze\'s offset).',
  },
  eventsOut: {
    thing: 'events_out',
    unit: 'total',
    type: 'counter',
    labels: ['outcome', 'contract'],
    services: CONSUMERS,
    help: 'Events handed on (produced or written), by contract; outcome: valid|dlq (validate), ok|duplicate|dlq (merge-compaction).',
  },
  consumerLag: {
    thing: 'consumer_lag',
    unit: 'messages',
    type: 'gauge',
    labels: ['topic', 'partition'],
    services: CONSUMERS,
    help: 'High watermark minus the read position of the consumer, per assigned topic-partition: records read and not yet committed are not in it (table_waiting_offsets of merge-compaction counts them).',
  },
  pausedPartitions: {
    thing: 'paused_partitions',
    unit: 'partitions',
    type: 'gauge',
    labels: ['topic'],
    services: ['merge-compaction'],
    help: 'Partitions currently paused by backpressure. merge-compaction only: validate never pauses (a batch waits for its transaction instead).',
  },
  dlqRecords: {
    thing: 'dlq_records',
    unit: 'total',
    type: 'counter',
    labels: ['reason', 'contract'],
    services: CONSUMERS,
    help: 'Records written to the dead-letter topic, by reason code and contract.',
  },
  dedupLookups: {
    thing: 'dedup_bronze_lookups',
    unit: 'total',
    type: 'counter',
    labels: ['outcome'],
    services: ['merge-compaction'],
    help: 'Records tier 1 looked up in bronze because their event time was inside the dedup watermark but older than its id memory holds (SLUICE_DEDUP_MAX_IDS), or a DLQ replay before the watermark; outcome: duplicate|new. A steady rate means the memory is too small for the rate.',
  },
  batchDuration: {
    thing: 'batch_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: ['outcome'],
    services: ['merge-compaction'],
    help: "Time to process one consumed batch end to end (tier 1); outcome: ok|error. validate's batch is one transaction: transaction_duration.",
    buckets: LATENCY_BUCKETS,
  },
  transactionDuration: {
    thing: 'transaction_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: ['outcome'],
    services: ['validate'],
    help: 'Kafka consume-transform-produce transaction latency; outcome: committed|aborted (the _count counts transactions).',
    buckets: LATENCY_BUCKETS,
  },
  commitDuration: {
    thing: 'commit_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: ['table', 'operation'],
    services: ['merge-compaction'],
    help: 'Table commit latency including conflict retries, by table and Delta operation (WRITE, MERGE, OPTIMIZE, …).',
    buckets: LATENCY_BUCKETS,
  },
  commits: {
    thing: 'commits',
    unit: 'total',
    type: 'counter',
    labels: ['table', 'outcome'],
    services: ['merge-compaction'],
    help: 'Table commit attempts; outcome: ok|retry (lost a race, retried)|conflict (refused)|error (recorded by the app).',
  },
  mergeDuration: {
    thing: 'merge_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Duration of one MERGE into a table (read, rewrite, commit).',
    buckets: LATENCY_BUCKETS,
  },
  mergeRewrittenBytes: {
    thing: 'merge_rewritten_bytes',
    unit: 'total',
    type: 'counter',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Bytes of existing files rewritten by MERGEs (write amplification).',
  },
  compactedFiles: {
    thing: 'compacted_files',
    unit: 'total',
    type: 'counter',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Small files removed by compaction.',
  },
  vacuumedFiles: {
    thing: 'vacuumed_files',
    unit: 'total',
    type: 'counter',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Unreferenced files deleted by vacuum.',
  },
  checkpointFailures: {
    thing: 'checkpoint_failures',
    unit: 'total',
    type: 'counter',
    labels: ['table', 'code'],
    services: ['merge-compaction'],
    help: 'Checkpoints due after a commit that failed (the commit stands; loads replay more log until one succeeds).',
  },
  lastCommit: {
    thing: 'last_commit',
    unit: 'timestamp_seconds',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Unix time of the last successful commit per table (one table per contract and tier): this process\'s commits, and the latest version of each table it loads (so it exists after a restart).',
  },
  tableWaiting: {
    thing: 'table_waiting',
    unit: 'offsets',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Work waiting for a table, in valid-topic offsets (an upper bound on events: transaction markers, dead-lettered records and duplicates count too). Bronze: the consumer lag of the partitions this process holds plus the records it holds in memory (once a second). Silver and gold: bronze offsets not folded yet (at each fold step, and when a step fails). Sum by table over pods.',
  },
  freshness: {
    thing: 'freshness',
    unit: 'seconds',
    type: 'histogram',
    labels: ['table'],
    services: ['merge-compaction', 'query-api'],
    help: 'Event time to queryable, per table: merge-compaction at each fold commit (from the Kafka time of the oldest folded event), query-api when it first answers from a table version (from the newest event time of that version).',
    buckets: FRESHNESS_BUCKETS,
  },
  tableVersion: {
    thing: 'table',
    unit: 'version',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction', 'query-api'],
    help: 'Latest committed (merge-compaction) or served (query-api) table version.',
  },
  tableFiles: {
    thing: 'table_data',
    unit: 'files',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Live data files in the latest table snapshot.',
  },
  tableSmallFiles: {
    thing: 'table_small',
    unit: 'files',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Live data files below the small-file size compaction uses (SLUICE_COMPACTION_SMALL_FILE_BYTES).',
  },
  compactionBacklog: {
    thing: 'compaction_backlog',
    unit: 'files',
    type: 'gauge',
    labels: ['table'],
    services: ['merge-compaction'],
    help: 'Small files in partitions compaction would pick up now (at least SLUICE_COMPACTION_MIN_FILES of them).',
  },
  httpRequestDuration: {
    thing: 'http_request_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: ['method', 'route', 'status'],
    services: HTTP,
    help: 'HTTP request latency by method, route pattern and status code.',
    buckets: LATENCY_BUCKETS,
  },
  producerQueue: {
    thing: 'producer_queue',
    unit: 'messages',
    type: 'gauge',
    labels: [],
    services: ['ingest'],
    help: 'Messages waiting in the Kafka producer queue (not yet acknowledged). ingest only: validate produces inside transactions, whose messages its commit waits for.',
  },
  produceDuration: {
    thing: 'produce_duration',
    unit: 'seconds',
    type: 'histogram',
    labels: [],
    services: ['ingest'],
    help: 'From enqueue of the first message of a send to the broker acknowledging the last. ingest only: validate produces inside transactions (see transaction_duration).',
    buckets: LATENCY_BUCKETS,
  },
  produceFailedMessages: {
    thing: 'produce_failed_messages',
    unit: 'total',
    type: 'counter',
    labels: ['code'],
    services: ['ingest'],
    help: 'Messages the broker did not acknowledge, by KAFKA_* error code. ingest only: a failed message aborts validate\'s transaction (transaction_duration, outcome aborted).',
  },
  kafkaClientErrors: {
    thing: 'kafka_client_errors',
    unit: 'total',
    type: 'counter',
    labels: ['code', 'retryable'],
    services: ['ingest', 'validate', 'merge-compaction'],
    help: 'Asynchronous Kafka client errors (broker down, fatal), by KAFKA_* code and retryable true|false.',
  },
  processMemory: {
    thing: 'process_memory',
    unit: 'bytes',
    type: 'gauge',
    labels: ['kind'],
    services: ALL,
    help: 'Memory of the process when scraped (process.memoryUsage()); kind: rss|heap_used|heap_total|external|array_buffers, and duckdb in merge-compaction (DuckDB buffer manager, duckdb_memory()). rss minus heap_total minus external is native memory (DuckDB, librdkafka, the allocator).',
  },
} as const satisfies Record<string, MetricSpec>;

/** Property name of a catalog entry. */
export type MetricKey = keyof typeof METRICS;

/** A catalog entry bound to one service: the concrete Prometheus name. */
export interface CatalogEntry {
  readonly key: MetricKey;
  readonly service: ServiceId;
  /** Full Prometheus name as scraped (histograms add `_bucket`, `_sum`, `_count`). */
  readonly name: string;
  readonly type: MetricType;
  readonly unit: string;
  readonly labels: readonly string[];
  readonly help: string;
  readonly buckets?: readonly number[];
}

/** `merge-compaction` → `merge_compaction`. */
export function servicePrefix(service: ServiceId): string {
  return `sluice_${service.replace(/-/g, '_')}`;
}

/** The Prometheus name of `key` as emitted by `service`. */
export function metricName(service: ServiceId, key: MetricKey): string {
  const spec: MetricSpec = METRICS[key];
  return `${servicePrefix(service)}_${spec.thing}_${spec.unit}`;
}

/** True when `service` emits `key`. */
export function emits(service: ServiceId, key: MetricKey): boolean {
  return (METRICS[key].services as readonly ServiceId[]).includes(service);
}

/** Every concrete metric, optionally for one service only. */
export function metricCatalog(service?: ServiceId): CatalogEntry[] {
  const out: CatalogEntry[] = [];
  for (const key of Object.keys(METRICS) as MetricKey[]) {
    const spec: MetricSpec = METRICS[key];
    for (const s of spec.services) {
      if (service !== undefined && s !== service) continue;
      out.push({
        key,
        service: s,
        name: metricName(s, key),
        type: spec.type,
        unit: spec.unit,
        labels: spec.labels,
        help: spec.help,
        ...(spec.buckets ? { buckets: spec.buckets } : {}),
      });
    }
  }
  return out;
}

/**
 * Maps a scraped series name to its catalog entry, stripping the `_bucket`/`_sum`/`_count`
 * suffixes of histograms. Returns undefined for names the catalog does not know.
 */
export function lookupSeries(seriesName: string): CatalogEntry | undefined {
  const byName = catalogIndex();
  const direct = byName.get(seriesName);
  if (direct) return direct;
  const m = /^(.*)_(bucket|sum|count)$/.exec(seriesName);
  if (!m) return undefined;
  const base = byName.get(m[1]);
  return base?.type === 'histogram' ? base : undefined;
}

let index: Map<string, CatalogEntry> | undefined;
function catalogIndex(): Map<string, CatalogEntry> {
  index ??= new Map(metricCatalog().map((e) => [e.name, e]));
  return index;
}
