import { validateError } from '../errors';
import { DLQ_HEADERS, INGEST_HEADERS, MAX_DETAIL_BYTES } from './headers';

/** One record read from the raw topic. */
export interface RawMessage {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
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
  ): { ok: true; contract: string; key: string; topic: string; value: Buffer } | { ok: false; contract?: string; issues: RouteIssue[] };
}

/** Where one raw record goes: the contract's valid topic, or the DLQ. */
export interface RoutedRecord {
  outcome: 'valid' | 'dlq';
  topic: string;
  key: Buffer | string | null;
  value: Buffer | null;
  headers: Record<string, string | Buffer>;
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
  if (msg.value === null || msg.value.length === 0) {
    return deadLetter(msg, options, [{ code: 'EVENT_NOT_JSON', path: '', message: 'the record has no value' }]);
  }
  if (msg.value.length > options.maxEventBytes) {
    return deadLetter(msg, options, [
      { code: 'EVENT_TOO_LARGE', path: '', message: `${msg.value.length} bytes; the limit is ${options.maxEventBytes}` },
    ]);
  }
  let result: ReturnType<ValidateContracts['check']>;
  try {
    result = contracts.check(msg.value, msg.headers);
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
    // Everything upstream put in headers (producer identity, receive time, trace context) travels on.
    headers: { ...msg.headers },
    contract: result.contract,
  };
}

function deadLetter(msg: RawMessage, options: RouteOptions, issues: RouteIssue[], contract?: string): RoutedRecord {
  const reason = issues[0]?.code ?? validateError('VALIDATE_INTERNAL').code;
  const headers: Record<string, string | Buffer> = { ...msg.headers };
  headers[DLQ_HEADERS.reason] = reason;
  headers[DLQ_HEADERS.detail] = detailOf(issues);
  headers[DLQ_HEADERS.sourceTopic] = msg.topic;
  headers[DLQ_HEADERS.sourcePartition] = String(msg.partition);
  headers[DLQ_HEADERS.sourceOffset] = String(msg.offset);
  headers[DLQ_HEADERS.producer] = msg.headers[INGEST_HEADERS.producer]?.toString('utf8') ?? 'unknown';
  headers[DLQ_HEADERS.time] = new Date(options.now).toISOString();
  const named = contract ?? msg.headers[INGEST_HEADERS.contract]?.toString('utf8');
  if (named !== undefined) headers[DLQ_HEADERS.contract] = named;
  return { outcome: 'dlq', topic: options.dlqTopic, key: msg.key, value: msg.value, headers, reason, contract: named };
}

/** The issues as JSON, cut to whole issues under MAX_DETAIL_BYTES. */
export function detailOf(issues: RouteIssue[]): string {
  let out = JSON.stringify(issues);
  let kept = issues.length;
  while (Buffer.byteLength(out) > MAX_DETAIL_BYTES && kept > 1) {
    kept = Math.ceil(kept / 2);
    out = JSON.stringify([...issues.slice(0, kept), { code: 'TRUNCATED', path: '', message: `${issues.length - kept} more issues` }]);
  }
  if (Buffer.byteLength(out) > MAX_DETAIL_BYTES) {
    out = JSON.stringify([{ code: issues[0].code, path: issues[0].path.slice(0, 200), message: issues[0].message.slice(0, 1000) }]);
  }
  return out;
}
