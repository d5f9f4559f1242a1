import { contractByName, deadLetterRecord } from '@sluice/contracts';
import { validateError } from '../errors';
import { INGEST_HEADERS, REPLAY_HEADER, replayMarkerOf } from './headers';

/** One record read from the raw topic. */
export interface RawMessage {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  /** The record's Kafka timestamp, ms (when ingest produced it, or the broker appended it). */
  timestamp?: number;
  /** Every value of each header name the record repeats (the consumer's repeatedHeaders): the DLQ copy keeps them all. */
  repeatedHeaders?: Record<string, Buffer[]>;
}

/** One problem of an event: reason code, path and words. */
export interface RouteIssue {
  code: string;
  path: string;
  message: string;
}

/** What routing needs from the contracts; a pure function of the bytes and headers. */
export interface ValidateContracts {
  check(
    value: Buffer,
    headers: Record<string, Buffer>,
    /** When the event was received (its record's timestamp): what the time rules judge against. */
    receivedAt?: number,
  ): { ok: true; contract: string; key: string; topic: string; value: Buffer } | { ok: false; contract?: string; issues: RouteIssue[] };
}

/** What a contract check answered for one record. */
export type CheckResult = ReturnType<ValidateContracts['check']>;

/** Where one raw record goes: the contract's valid topic, or the DLQ. */
export interface RoutedRecord {
  outcome: 'valid' | 'dlq';
  topic: string;
  key: Buffer | string | null;
  value: Buffer | null;
  /** A list: a name the raw record repeated, each value in order (DLQ records only). */
  headers: Record<string, string | Buffer | readonly Buffer[]>;
  /** Reason code when outcome is 'dlq'. */
  reason?: string;
  contract?: string;
}

/** Routing settings. */
export interface RouteOptions {
  dlqTopic: string;
  maxEventBytes: number;
  /** Clock for `sluice-dlq-time`, ms since epoch. */
  now: number;
}

/**
 * Decides where one raw record goes. Never throws on bad input: a record that cannot be read,
 * names no known contract or breaks a rule becomes a DLQ record carrying its original key,
 * bytes and headers, the reason and where it came from. Only a bug in a contract's own code can
 * throw, and that too is caught and dead-lettered so one event cannot crash-loop the service.
 */
export function routeRecord(msg: RawMessage, contracts: ValidateContracts, options: RouteOptions): RoutedRecord {
  return routeWithCheck(msg, checkWith(contracts), options);
}

/** The contracts' check of a record as routing asks it (its value, headers and timestamp). */
export function checkWith(contracts: ValidateContracts): (msg: RawMessage) => CheckResult {
  return (msg) => contracts.check(msg.value as Buffer, msg.headers, msg.timestamp);
}

/**
 * Whether routing asks the contracts about this record: it has a value within the size limit
 * (an empty or oversized one is dead-lettered without being read).
 */
export function needsCheck(msg: Pick<RawMessage, 'value'>, maxEventBytes: number): boolean {
  return msg.value !== null && msg.value.length > 0 && msg.value.length <= maxEventBytes;
}

/**
 * {@link routeRecord} with the contract check given as a function of the record, called only
 * when {@link needsCheck} (e.g. answered by a worker thread). A check that throws dead-letters
 * the record as VALIDATE_INTERNAL, as in routeRecord.
 */
export function routeWithCheck(msg: RawMessage, check: (msg: RawMessage) => CheckResult, options: RouteOptions): RoutedRecord {
  if (msg.value === null || msg.value.length === 0) {
    return deadLetter(msg, options, [{ code: 'EVENT_NOT_JSON', path: '', message: 'the record has no value' }]);
  }
  if (msg.value.length > options.maxEventBytes) {
    return deadLetter(msg, options, [
      { code: 'EVENT_TOO_LARGE', path: '', message: `${msg.value.length} bytes; the limit is ${options.maxEventBytes}` },
    ]);
  }
  let result: CheckResult;
  try {
    result = check(msg);
  } catch (err) {
    const internal = validateError('VALIDATE_INTERNAL', {}, err);
    return deadLetter(msg, options, [{ code: internal.code, path: '', message: `${internal.message}: ${(err as Error)?.message ?? String(err)}` }]);
  }
  if (!result.ok) return deadLetter(msg, options, result.issues, result.contract);
  return {
    outcome: 'valid',
    topic: result.topic,
    key: result.key,
    value: result.value,
    // No upstream header travels on but a replay's marker: bronze takes the producer from the
    // event's envelope, the topic names the contract, and each header costs every consumer a
    // native conversion per record. traceRouted adds a sampled trace context. A DLQ record keeps
    // all of them, so a rejected event loses nothing; merge-compaction's dead letters of valid
    // records therefore name their producer `unknown` (they are Avro single-object encoded, so a
    // replay still finds the contract). `sluice-replay-of` (rare: DLQ replays only) tells
    // merge-compaction to look the event up in bronze even when it is older than its watermark.
    headers: replayMarker(msg.headers),
    contract: result.contract,
  };
}

function deadLetter(msg: RawMessage, options: RouteOptions, issues: RouteIssue[], contract?: string): RoutedRecord {
  const reason = issues[0]?.code ?? validateError('VALIDATE_INTERNAL').code;
  // Only a catalog contract's name is kept: it becomes a metric label and a header, and a
  // producer writing straight to raw may put anything in its contract header, which the check
  // hands back for an event it rejects (an unknown contract, a mismatch).
  const header = msg.headers[INGEST_HEADERS.contract]?.toString('utf8');
  const named = [contract, header].map((c) => (c === undefined ? undefined : contractByName(c)?.name)).find((c) => c !== undefined);
  // Cut to fit a Kafka message if need be: a record that can never be produced would fail its
  // transaction again at every retry and stop the partition (the original stays in raw).
  const { key, value, headers } = deadLetterRecord(msg, { reason, issues, source: msg, contract: named, now: options.now });
  return { outcome: 'dlq', topic: options.dlqTopic, key, value, headers, reason, contract: named };
}

/** The DLQ tool's replay marker of a raw record, to carry onto its valid record; else no header. */
function replayMarker(headers: Record<string, Buffer>): Record<string, Buffer> {
  const marker = replayMarkerOf(headers);
  return marker === undefined ? {} : { [REPLAY_HEADER]: marker };
}
