import type { AvroField, AvroRecord } from './avro/schema';

/** What an event does to its entity: `upsert` replaces the current state, `delete` is a tombstone. */
export const OPS = ['upsert', 'delete'] as const;

/** One of {@link OPS}. */
export type Op = (typeof OPS)[number];

/**
 * The envelope fields every event carries, in this order, before its entity key fields and its
 * payload. `event_time` is epoch milliseconds UTC (producers send ISO-8601 in JSON);
 * `version` orders the updates of one entity (larger wins; equal versions are resolved by
 * event_id so merges are deterministic); `schema_version` names the contract version the producer
 * wrote.
 */
export const ENVELOPE_FIELDS = [
  { name: 'event_id', type: 'string', doc: 'Unique, immutable id of this event (dedup key).' },
  {
    name: 'event_time',
    type: { type: 'long', logicalType: 'timestamp-millis' },
    doc: 'When the event happened, epoch ms UTC.',
  },
  { name: 'producer', type: 'string', doc: 'Logical name of the producing system.' },
  { name: 'schema_version', type: 'int', doc: 'Contract version the producer wrote.' },
  { name: 'version', type: 'long', doc: 'Entity version, monotonic per entity key.' },
  { name: 'op', type: { type: 'enum', name: 'sluice.Op', symbols: OPS }, doc: 'upsert or delete.' },
] as const satisfies readonly AvroField[];

/** Names of the envelope fields. */
export const ENVELOPE_FIELD_NAMES = ENVELOPE_FIELDS.map((f) => f.name);

/** Name of the field that holds the domain payload (null on deletes). */
export const PAYLOAD_FIELD = 'payload';

/**
 * Builds a contract's event schema: envelope fields, then the entity key fields, then
 * `payload` as a nullable record (null only on `delete`). Keeps literal types so the event type
 * can be derived from the result.
 */
export function eventSchema<
  const Name extends string,
  const Key extends readonly AvroField[],
  const Payload extends AvroRecord,
>(
  name: Name,
  keyFields: Key,
  payload: Payload,
  doc: string,
): {
  readonly type: 'record';
  readonly name: Name;
  readonly doc: string;
  readonly fields: readonly [
    ...typeof ENVELOPE_FIELDS,
    ...Key,
    { readonly name: 'payload'; readonly type: readonly ['null', Payload]; readonly default: null },
  ];
} {
  return {
    type: 'record',
    name,
    doc,
    fields: [...ENVELOPE_FIELDS, ...keyFields, { name: PAYLOAD_FIELD, type: ['null', payload], default: null }],
  };
}
