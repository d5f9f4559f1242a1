import type { TopicSpec } from './contract';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Partitions of every valid topic; silver bucket counts are multiples of it. */
export const VALID_TOPIC_PARTITIONS = 8;

/** Silver buckets per table (a multiple of {@link VALID_TOPIC_PARTITIONS}). */
export const SILVER_BUCKETS = 32;

/** Partition columns of bronze tables: UTC event date, then silver bucket. */
export const BRONZE_PARTITION_COLUMNS = Object.freeze(['event_date', 'bucket'] as const);

/** Partition columns of silver tables: the murmur2 bucket of the entity key. */
export const SILVER_PARTITION_COLUMNS = Object.freeze(['bucket'] as const);

/** Bronze and silver column holding `keyHashOf(entity key)`; silver files are clustered by it. */
export const KEY_HASH_COLUMN = '_key_hash';

/**
 * Rows per Parquet row group in silver files (four DuckDB vectors): with files in key-hash order,
 * an entity lookup by key hash reads one group of a file, not all of it.
 */
export const SILVER_ROW_GROUP_ROWS = 8192;

/**
 * Parquet codec of silver files (`sluice.parquet.compression`): uncompressed. Silver holds one
 * row per entity, so its size is bounded by the entity count, and dashboards read it all day: at
 * 10M rows a lookup or a day aggregate skips decompression (docs/bench/query-api.md) for about
 * 1.8× the bytes of snappy. Bronze (all history) keeps snappy. Every Delta reader reads both.
 */
export const SILVER_PARQUET_CODEC = 'uncompressed';

/**
 * The order of rows inside silver files (MERGE and compaction write it): by UTC day of
 * `event_time`, then by key hash. A day's rows sit in a few row groups of each bucket file, so a
 * dashboard's filter on a day reads those; within a day rows are in key order, so a lookup by key
 * hash reads about one group per day the file holds. (Shaped as @sluice/lake's SortKey.)
 */
export const SILVER_ROW_ORDER = Object.freeze([Object.freeze({ column: 'event_time', truncate: 'day' as const }), KEY_HASH_COLUMN] as const);

/**
 * The raw topic ingest writes every accepted event to, keyed by entity key, JSON bytes. Its
 * record timestamps are the broker's (`LogAppendTime`): validate judges an event's time rules as
 * of its record's timestamp, and a producer writing to raw directly must not choose that instant
 * (with `CreateTime`, a record stamped 29 days ago let an event from 30 days ago pass the 7-day
 * age rule).
 */
export const RAW_TOPIC: TopicSpec = Object.freeze({
  name: 'sluice.raw',
  partitions: VALID_TOPIC_PARTITIONS,
  retentionMs: 3 * DAY_MS,
  cleanupPolicy: 'delete',
  timestampType: 'LogAppendTime',
});

/** The dead-letter topic validate writes rejected events to (original bytes, reason, source). */
export const DLQ_TOPIC: TopicSpec = Object.freeze({
  name: 'sluice.dlq',
  partitions: 2,
  retentionMs: 30 * DAY_MS,
  cleanupPolicy: 'delete',
  timestampType: 'CreateTime',
});

/** Name of the valid topic of a contract: `sluice.<contract>.valid`. */
export function validTopicName(contract: string): string {
  return `sluice.${contract}.valid`;
}

/** The valid-topic spec of a contract (Avro values, keyed by entity key). */
export function validTopic(contract: string): TopicSpec {
  return Object.freeze({
    name: validTopicName(contract),
    partitions: VALID_TOPIC_PARTITIONS,
    retentionMs: 7 * DAY_MS,
    cleanupPolicy: 'delete',
    timestampType: 'CreateTime',
  });
}

/**
 * Kafka header names the services agree on. ingest sets `producer` (the authenticated identity)
 * on every raw record, and `contract` only where the bytes alone do not name it: the request named
 * it in its HTTP header (then the body need not), or the event is Confluent-framed Avro (a schema
 * id means something only to a registry). Elsewhere the body's `contract` field or its Avro
 * fingerprint names it, and a second copy would cost every consumer a header conversion per
 * record. The time ingest
 * accepted an event is the record's Kafka timestamp (the broker's append time, see
 * {@link RAW_TOPIC}); records written
 * before 2026-12-01 also carry a `sluice-received-at` header, which nothing reads.
 * DLQ records carry the `sluice-dlq-*` headers beside the original bytes: `dlqReason` (issue
 * code), `dlqDetail` (JSON issues, capped), `dlqContract`, `dlqProducer` (ingest's producer or
 * `unknown`), `dlqTime` (ISO-8601) and the source coordinates; `dlqTruncated` (JSON of the
 * original sizes) only on a record cut to fit a Kafka message, whose original is read at its
 * source coordinates. `replayOf` (`<dlq topic>/<partition>/<offset>`) marks a record the DLQ tool
 * wrote back to raw; validate keeps it on the valid record, and merge-compaction then checks the
 * event against bronze whatever its age (a replay may repeat an event from long ago). The
 * strings are part of records already on the DLQ topic: never change them.
 */
export const HEADERS = Object.freeze({
  contract: 'sluice-contract',
  producer: 'sluice-producer',
  dlqReason: 'sluice-dlq-reason',
  dlqDetail: 'sluice-dlq-detail',
  dlqContract: 'sluice-dlq-contract',
  dlqProducer: 'sluice-dlq-producer',
  dlqTime: 'sluice-dlq-time',
  dlqSourceTopic: 'sluice-dlq-source-topic',
  dlqSourcePartition: 'sluice-dlq-source-partition',
  dlqSourceOffset: 'sluice-dlq-source-offset',
  dlqTruncated: 'sluice-dlq-truncated',
  replayOf: 'sluice-replay-of',
});

/** A `replayOf` value longer than this is not one the DLQ tool wrote (`<topic>/<partition>/<offset>`). */
export const MAX_REPLAY_MARKER_BYTES = 300;

/** What the DLQ tool writes as `replayOf` (a Kafka topic name is 1–249 of these characters). */
const REPLAY_MARKER = /^[A-Za-z0-9._-]{1,249}\/\d{1,10}\/\d{1,19}$/;

/**
 * Whether a `replayOf` value is one the DLQ tool could have written. A producer writing to raw
 * directly may set the header to anything: a megabyte of it, carried onto a valid record, made
 * that record too large to produce.
 */
export function isReplayMarker(value: Buffer): boolean {
  return value.length <= MAX_REPLAY_MARKER_BYTES && REPLAY_MARKER.test(value.toString('latin1'));
}

/** Table name prefixes; tables are `<tier>_<contract>` and gold `gold_<contract>_<aggregate>`. */
export function tableName(tier: 'bronze' | 'silver', contract: string): string {
  return `${tier}_${contract}`;
}

/** Name of a gold aggregate table. */
export function goldTableName(contract: string, aggregate: string): string {
  return `gold_${contract}_${aggregate}`;
}
