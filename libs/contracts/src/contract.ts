import type { AvroRecord } from './avro/schema';
import type { Issue } from './reasons';

/** Registry compatibility levels (Confluent names). `_TRANSITIVE` checks against every older version. */
export const COMPATIBILITY_LEVELS = [
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
  'NONE',
] as const;

/** One of {@link COMPATIBILITY_LEVELS}. */
export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number];

/** Provisioning hints for one Kafka topic. */
export interface TopicSpec {
  readonly name: string;
  /** Suggested partition count; valid topics use a divisor of the silver bucket count. */
  readonly partitions: number;
  /** `retention.ms` to set at creation. */
  readonly retentionMs: number;
  readonly cleanupPolicy: 'delete' | 'compact';
  /**
   * `message.timestamp.type`: whose clock a record's timestamp is. `LogAppendTime` (the broker's
   * at append) where consumers judge records by it and producers outside the pipeline may write.
   */
  readonly timestampType: 'CreateTime' | 'LogAppendTime';
}

/**
 * Data-contract rule on one field, addressed by a dotted path in the event (`payload.total_cents`).
 * Ranges are inclusive. Strings without `maxLength` get {@link DEFAULT_MAX_STRING_LENGTH}.
 */
export interface FieldRule {
  readonly path: string;
  readonly min?: number;
  readonly max?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: RegExp;
  /** Plain words for the pattern, used in issue messages ("three upper-case letters"). */
  readonly patternDescription?: string;
}

/** Longest string accepted where a rule gives no `maxLength`, in UTF-16 code units. */
export const DEFAULT_MAX_STRING_LENGTH = 1024;

/** A measure of a gold aggregate. `sum` adds a numeric column; `count` counts events. */
export interface AggregateMeasure {
  readonly name: string;
  readonly fn: 'count' | 'sum';
  /** The column summed (a flattened column name, see `toRow`); absent for `count`. */
  readonly column?: string;
}

/**
 * A windowed gold aggregate a contract declares: tumbling windows of `windowMs` over
 * `event_time`, grouped by `groupBy` columns (flattened names), computing `measures`.
 * Deletes are not counted.
 */
export interface GoldAggregate {
  readonly name: string;
  readonly table: string;
  readonly windowMs: number;
  readonly groupBy: readonly string[];
  readonly measures: readonly AggregateMeasure[];
}

/** One version of a contract's schema, kept forever so evolution can be checked and tested. */
export interface SchemaVersion {
  readonly version: number;
  readonly schema: AvroRecord;
}

/**
 * A data contract: everything the services need to know about one kind of event.
 * `E` is the event type of the latest schema version, derived from it.
 */
export interface Contract<E = unknown> {
  readonly name: string;
  readonly doc: string;
  /**
   * `state`: events update an entity's current state (silver upserts by key, last version wins,
   * deletes remove). `append`: every event is a fact (silver dedups by event_id; only upserts).
   */
  readonly kind: 'state' | 'append';
  /** All schema versions, oldest first; the last one is the latest. */
  readonly versions: readonly SchemaVersion[];
  readonly latest: SchemaVersion;
  /** Top-level fields that form the entity key, in key order. */
  readonly keyFields: readonly string[];
  /** The stable entity key string: the Kafka message key and the bucket hash input. */
  entityKey(event: E): string;
  /** Compatibility level new versions must keep (checked by the schema gate, set on the registry). */
  readonly compatibility: CompatibilityLevel;
  /** The valid topic of this contract. */
  readonly topic: TopicSpec;
  /** Registry subject of the value schema (TopicNameStrategy: `<topic>-value`). */
  readonly subject: string;
  readonly tables: {
    /** Append-only history; partitioned by `event_date` (UTC, YYYY-MM-DD) and `bucket`. */
    readonly bronze: string;
    /** Current state (state) or deduplicated facts (append); bucketed by `bucket`. */
    readonly silver: string;
  };
  /** Silver buckets; a multiple of `topic.partitions`. */
  readonly buckets: number;
  /**
   * Partition columns of the tables: bronze by (`event_date`, `bucket`), silver by `bucket`,
   * where `bucket` = `bucketOf(entityKey, buckets)` (murmur2, like Kafka's partitioner) and
   * `event_date` is the UTC date of event_time. See `placementOf`.
   */
  readonly partitionColumns: { readonly bronze: readonly string[]; readonly silver: readonly string[] };
  readonly rules: readonly FieldRule[];
  /** Cross-field checks run after the field rules when the event is otherwise valid. */
  readonly checks: readonly ((event: E) => Issue[])[];
  readonly aggregates: readonly GoldAggregate[];
  /**
   * Whether producers may send this contract's events as Avro (single-object or Confluent
   * framing) as well as JSON. When false, an Avro event of it is refused at ingest and
   * dead-lettered by validate with `AVRO_NOT_ACCEPTED`.
   */
  readonly acceptsAvro: boolean;
}

/** A contract of any event type (what registries of contracts hold). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyContract = Contract<any>;
