import { contractByName, decodeEvent, readFraming, REASONS, type AvroDecoder, type Issue, type ReasonCode } from '@sluice/contracts';
import type { Principal } from '../auth/api-keys';
import type { EventSlice } from '../body/split';

/** Limits applied to each event of a request. */
export interface EventLimits {
  maxEventBytes: number;
  maxDepth: number;
  maxFutureSkewMs: number;
  maxEventAgeMs: number;
}

/** An event that passed the edge checks, ready to be produced to the raw topic. */
export interface AcceptedEvent {
  index: number;
  contract: string;
  key: string;
  bytes: Buffer;
}

/**
 * Per-event reason codes: the contracts catalog plus CONTRACT_FORBIDDEN and PRODUCER_MISMATCH,
 * which only ingest can know (they depend on the API key).
 */
export type EventReason = ReasonCode | 'CONTRACT_FORBIDDEN' | 'PRODUCER_MISMATCH';

/** Reason codes ingest adds to the contracts catalog, with their meaning (docs list them too). */
export const INGEST_EVENT_REASONS = {
  CONTRACT_FORBIDDEN: "the API key's scopes do not include this event's contract",
  PRODUCER_MISMATCH: "the event's envelope `producer` is not a name the API key may send as",
} as const;

/** Why one event was rejected; serialised as is into the response. */
export interface RejectedEvent {
  index: number;
  line?: number;
  code: EventReason;
  message: string;
  issues?: Issue[];
}

const MAX_ISSUES_REPORTED = 20;

/** Issues one answer reports across all its rejected events. */
export const MAX_ISSUES_PER_ANSWER = 1000;

/**
 * The rejected events as one answer reports them: every event keeps its index, line, code and
 * message; the issue details stop after {@link MAX_ISSUES_PER_ANSWER} in all. Up to 20 issues per
 * event made an answer 20–80 times its request (10,000 lines of `{}`: 220 kB in, 8 MB out), held
 * outside the in-flight budget for as long as the client did not read it.
 */
export function withinIssueBudget(rejected: readonly RejectedEvent[]): RejectedEvent[] {
  let left = MAX_ISSUES_PER_ANSWER;
  return rejected.map((r) => {
    if (r.issues === undefined) return r;
    if (r.issues.length <= left) {
      left -= r.issues.length;
      return r;
    }
    left = 0;
    const { issues: _omitted, ...rest } = r;
    return rest;
  });
}

function reject(slice: EventSlice, code: EventReason, message: string, issues?: Issue[]): { ok: false; rejected: RejectedEvent } {
  const rejected: RejectedEvent = { index: slice.index, code, message };
  if (slice.line !== undefined) rejected.line = slice.line;
  if (issues && issues.length > 0) rejected.issues = issues.slice(0, MAX_ISSUES_REPORTED);
  return { ok: false, rejected };
}

/**
 * Everything ingest can check about one event at once: size and depth (from the splitter, before
 * any parsing), then the contract's own decoder — strict JSON (or Avro framing), contract, schema
 * version, schema, data rules, envelope and timestamp sanity — and the API key's scope and the
 * producer names it may send as.
 * Pure apart from `now`.
 */
export function checkEvent(
  slice: EventSlice,
  principal: Principal,
  requestContract: string | undefined,
  limits: EventLimits,
  now: number,
  avro = false,
  avroDecoder?: AvroDecoder,
): { ok: true; accepted: AcceptedEvent } | { ok: false; rejected: RejectedEvent } {
  if (slice.bytes.length > limits.maxEventBytes) {
    return reject(slice, 'EVENT_TOO_LARGE', `the event has ${slice.bytes.length} bytes; the limit is ${limits.maxEventBytes}`);
  }
  // An Avro request must be framed; without this check JSON-looking bytes would be read as JSON.
  if (avro && readFraming(slice.bytes) === undefined) {
    return reject(slice, 'AVRO_FRAMING_UNKNOWN', REASONS.AVRO_FRAMING_UNKNOWN.message);
  }
  // And a JSON request must not carry Avro: its schema ids would not be looked up in the registry
  // (a Confluent id ingest had not learned was refused as unknown, one it had went without the
  // contract header validate needs), and inside NDJSON binary bytes are cut at newlines.
  // Bytes 0x00 and 0xC3 start Avro framings and never JSON text: the decoder would take any such
  // event for Avro and answer with an Avro reason (a NUL line in NDJSON got AVRO_FRAMING_UNKNOWN).
  const first = slice.bytes[0];
  if (!avro && (first === 0x00 || first === 0xc3)) {
    const why =
      readFraming(slice.bytes) !== undefined
        ? 'the event is Avro-framed binary: send Avro with an Avro Content-Type (application/vnd.apache.avro or avro/binary)'
        : `the event starts with byte 0x${first.toString(16).padStart(2, '0')}, which JSON text never does`;
    return reject(slice, 'EVENT_NOT_JSON', why);
  }
  if (slice.depth > limits.maxDepth) {
    return reject(slice, 'EVENT_TOO_DEEP', `the event nests ${slice.depth} levels; the limit is ${limits.maxDepth}`);
  }
  const decoded = decodeEvent(slice.bytes, {
    contract: requestContract,
    now,
    limits: { maxBytes: limits.maxEventBytes, maxDepth: limits.maxDepth, maxFutureSkewMs: limits.maxFutureSkewMs, maxAgeMs: limits.maxEventAgeMs },
    avro: avroDecoder,
  });
  const contract = decoded.ok ? decoded.name : decoded.contract;
  // Scope before schema details: a key learns nothing about contracts it may not send. Only for a
  // contract that exists: a request header naming none, on an event that failed before the name
  // was looked up (not JSON, say), was answered CONTRACT_FORBIDDEN with the header's text in every
  // event's message (15 KB × 10,000 events: a 150 MB answer, and three at once ran ingest out of
  // heap). Such an event gets its own first reason.
  if (contract !== undefined && contractByName(contract) !== undefined && !principal.mayUse(contract)) {
    return reject(slice, 'CONTRACT_FORBIDDEN', `the API key may not send contract "${contract}"`);
  }
  if (!decoded.ok) {
    const first = decoded.issues[0];
    return reject(slice, first?.code ?? 'EVENT_SCHEMA_MISMATCH', first?.message ?? REASONS.EVENT_SCHEMA_MISMATCH.message, decoded.issues);
  }
  // Bronze keeps the envelope's producer: a key may only file events under its own names.
  const claimed = (decoded.event as { producer?: unknown }).producer;
  if (typeof claimed !== 'string' || !principal.maySendAs(claimed)) {
    return reject(slice, 'PRODUCER_MISMATCH', `the event's producer ${JSON.stringify(String(claimed).slice(0, 128))} is not one the API key may send as; it sends as "${principal.producer}"`);
  }
  return {
    ok: true,
    accepted: { index: slice.index, contract: decoded.name, key: decoded.contract.entityKey(decoded.event as never), bytes: slice.bytes },
  };
}

/**
 * Whether an accepted event's raw record repeats its contract in the `sluice-contract` header:
 * only where validate could not read it from the bytes alone — the request named it in its HTTP
 * header (a JSON body then need not), or the event is Confluent-framed Avro (its schema id means
 * something only to a registry). Elsewhere the body's `contract` field or its Avro fingerprint
 * names it, and a second copy would cost every consumer of raw a header conversion per record.
 */
export function repeatsContract(bytes: Uint8Array, requestContract: string | undefined, avro: boolean): boolean {
  return requestContract !== undefined || (avro && readFraming(bytes)?.kind === 'confluent');
}
