import type { Issue } from '@sluice/errors';
import type { Principal } from '../auth/api-keys';
import type { EventReason } from '../errors';
import { EVENT_REASONS } from '../errors';
import type { EventSlice } from '../body/split';
import type { EdgeContracts } from './edge-contracts';
import { findForbiddenKey, parseJson } from './safe-json';

/** Limits applied to each event of a request. */
export interface EventLimits {
  maxEventBytes: number;
  maxDepth: number;
}

/** An event that passed the edge checks, ready to be produced to the raw topic. */
export interface AcceptedEvent {
  index: number;
  contract: string;
  key: string;
  bytes: Buffer;
}

/** Why one event was rejected; serialised as is into the response. */
export interface RejectedEvent {
  index: number;
  line?: number;
  code: EventReason;
  message: string;
  issues?: Issue[];
}

const MAX_ISSUES_REPORTED = 20;

function reject(slice: EventSlice, code: EventReason, issues?: Issue[], message: string = EVENT_REASONS[code]): { ok: false; rejected: RejectedEvent } {
  const rejected: RejectedEvent = { index: slice.index, code, message };
  if (slice.line !== undefined) rejected.line = slice.line;
  if (issues && issues.length > 0) rejected.issues = issues.slice(0, MAX_ISSUES_REPORTED);
  return { ok: false, rejected };
}

/**
 * Everything ingest can check about one event at once, cheapest first: size, depth, JSON,
 * shape, dangerous keys, contract, the key's scope, then the contract's envelope and schema.
 * Pure: no I/O, no clock.
 */
export function checkEvent(
  slice: EventSlice,
  principal: Principal,
  contracts: EdgeContracts,
  limits: EventLimits,
): { ok: true; accepted: AcceptedEvent } | { ok: false; rejected: RejectedEvent } {
  if (slice.bytes.length > limits.maxEventBytes) {
    return reject(slice, 'EVENT_TOO_LARGE', undefined, `the event has ${slice.bytes.length} bytes; the limit is ${limits.maxEventBytes}`);
  }
  if (slice.depth > limits.maxDepth) {
    return reject(slice, 'EVENT_TOO_DEEP', undefined, `the event nests ${slice.depth} levels; the limit is ${limits.maxDepth}`);
  }
  const parsed = parseJson(slice.bytes);
  if (!parsed.ok) return reject(slice, 'EVENT_JSON_INVALID', undefined, `the event is not valid JSON: ${parsed.message}`);
  const event = parsed.value;
  if (event === null || typeof event !== 'object' || Array.isArray(event)) return reject(slice, 'EVENT_NOT_OBJECT');
  const forbidden = findForbiddenKey(event);
  if (forbidden) return reject(slice, 'EVENT_FORBIDDEN_KEY', [{ code: 'FORBIDDEN_KEY', path: forbidden, message: 'key not allowed' }]);

  const record = event as Record<string, unknown>;
  const contract = contracts.contractOf(record);
  if (contract === undefined) return reject(slice, 'EVENT_CONTRACT_MISSING');
  if (!contracts.has(contract)) return reject(slice, 'EVENT_CONTRACT_UNKNOWN', undefined, `unknown contract "${contract.slice(0, 100)}"`);
  if (!principal.mayUse(contract)) return reject(slice, 'EVENT_CONTRACT_FORBIDDEN', undefined, `the API key may not send contract "${contract}"`);
  const checked = contracts.check(contract, record);
  if (!checked.ok) return reject(slice, checked.envelope ? 'EVENT_ENVELOPE_INVALID' : 'EVENT_SCHEMA_INVALID', checked.issues);
  return { ok: true, accepted: { index: slice.index, contract, key: checked.key, bytes: slice.bytes } };
}
