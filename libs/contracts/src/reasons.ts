/**
 * The closed catalog of reason codes for rejected events. ingest answers them in HTTP bodies,
 * validate writes them into DLQ records; dashboards count by them. A code, once shipped, keeps its
 * meaning: add new codes, never rename or reuse one. docs/design/contracts.md lists the same
 * table and a unit test keeps the two in step.
 */
export const REASONS = {
  CONTRACT_UNKNOWN: { status: 404, message: 'no contract of that name' },
  CONTRACT_MISSING: { status: 400, message: 'no contract named by header or by the "contract" field' },
  CONTRACT_MISMATCH: { status: 400, message: 'the contract header and the "contract" field disagree' },
  EVENT_TOO_LARGE: { status: 413, message: 'event larger than the configured maximum size' },
  EVENT_NOT_UTF8: { status: 400, message: 'event bytes are not valid UTF-8' },
  EVENT_NOT_JSON: { status: 400, message: 'event is not well-formed JSON' },
  EVENT_TOO_DEEP: { status: 400, message: 'event nests deeper than the allowed depth' },
  EVENT_DUPLICATE_KEY: { status: 400, message: 'a JSON object repeats a key' },
  EVENT_FORBIDDEN_KEY: { status: 400, message: 'a JSON key is __proto__, constructor or prototype' },
  EVENT_NUMBER_UNSAFE: { status: 400, message: 'a number is not exactly representable (beyond 2^53, a long beyond ±(2^53 − 2), not finite, or a non-integer literal that reads as an integer)' },
  EVENT_NOT_OBJECT: { status: 400, message: 'event is not a JSON object' },
  EVENT_SCHEMA_MISMATCH: { status: 422, message: 'a value does not have the type the schema declares' },
  EVENT_FIELD_MISSING: { status: 422, message: 'a required field is absent' },
  EVENT_FIELD_UNKNOWN: { status: 422, message: 'a field the schema version does not declare' },
  SCHEMA_VERSION_UNKNOWN: { status: 422, message: 'schema_version, or the Avro writer schema, is no version of the contract' },
  RULE_RANGE: { status: 422, message: 'a number is outside its allowed range' },
  RULE_ENUM: { status: 422, message: 'a value is not one of the allowed symbols' },
  RULE_LENGTH: { status: 422, message: 'a string or array is shorter or longer than allowed' },
  RULE_PATTERN: { status: 422, message: 'a string does not have the required form' },
  RULE_TIMESTAMP_FORMAT: { status: 422, message: 'a timestamp is not ISO-8601 with a zone, or out of range' },
  RULE_TIMESTAMP_FUTURE: { status: 422, message: 'event_time is further in the future than the allowed clock skew' },
  RULE_TIMESTAMP_EXPIRED: { status: 422, message: 'event_time is older than the retention window' },
  RULE_KEY_MISSING: { status: 422, message: 'the entity key is empty' },
  RULE_OP_PAYLOAD: { status: 422, message: 'op and payload disagree (upsert needs a payload, delete has none)' },
  RULE_OP_NOT_ALLOWED: { status: 422, message: 'the contract does not accept this op' },
  RULE_CROSS_FIELD: { status: 422, message: 'fields are individually valid but inconsistent together' },
  AVRO_FRAMING_UNKNOWN: { status: 400, message: 'bytes start with neither Confluent (0x00) nor single-object (0xC3 0x01) framing' },
  AVRO_WRITER_UNKNOWN: { status: 422, message: 'no known schema for the writer id or fingerprint' },
  AVRO_DECODE_FAILED: { status: 400, message: 'Avro body does not decode with the writer schema' },
  AVRO_NOT_ACCEPTED: { status: 415, message: 'the contract accepts its events as JSON only' },
} as const satisfies Record<string, { status: number; message: string }>;

/** One stable reason code from {@link REASONS}. */
export type ReasonCode = keyof typeof REASONS;

/** All reason codes, in catalog order. */
export const REASON_CODES = Object.freeze(Object.keys(REASONS) as ReasonCode[]);

/**
 * One problem found in an input. `path` is a JSON-pointer-like location (`/payload/total_cents`,
 * `` for the whole event); `message` is plain words for the producer.
 */
export interface Issue {
  readonly code: ReasonCode;
  readonly path: string;
  readonly message: string;
}

/** Outcome of a decoder or validator that never throws on bad input. */
export type Result<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

/**
 * Most issues reported for one event. Every issue is found, but a hostile event with 50,000
 * unknown fields must not become a 50,000-entry DLQ record or HTTP answer.
 */
export const MAX_ISSUES = 100;

/** Builds an {@link Issue}. */
export function issue(code: ReasonCode, path: string, message: string): Issue {
  return { code, path, message };
}

/** HTTP status ingest answers for an event rejected with `code` (4xx; 413 for size, 404 for contract). */
export function httpStatusOf(code: ReasonCode): number {
  return REASONS[code].status;
}
