import { decodeEvent, encodeSingleObject, HEADERS, validTopicName, type AvroDecoder, type ValidationLimits } from '@sluice/contracts';
import { REPLAY_HEADER, replayMarkerOf } from './headers';
import type { ValidateContracts } from './route';

/** Settings of {@link contractsForValidate}. */
export interface ContractsAdapterOptions {
  /** Prepended to every valid topic name (tests isolate their topics with it); '' in production. */
  validTopicPrefix: string;
  limits?: Partial<ValidationLimits>;
  /** Clock for timestamp sanity rules, ms since epoch. */
  now?: () => number;
  /** Avro decoder holding Confluent schema ids learned from the registry; default the contracts' own. */
  avro?: AvroDecoder;
}

/**
 * The only headers the check reads (the contract's name, a DLQ replay's marker): a check in a
 * worker thread is given these and no others.
 */
export const CHECK_HEADERS: readonly string[] = [HEADERS.contract, REPLAY_HEADER];

/**
 * ValidateContracts over @sluice/contracts: decodeEvent (JSON or Avro, contract from the
 * `sluice-contract` header or the body) then the event in the contract's latest schema, Avro
 * single-object encoded, for the contract's valid topic. Reads only {@link CHECK_HEADERS}.
 */
export function contractsForValidate(options: ContractsAdapterOptions): ValidateContracts {
  const now = options.now ?? Date.now;
  // A record the DLQ tool wrote back is as old as its trip through the DLQ made it (which keeps
  // 30 days), so the age rule does not apply to it: refused again, it could never be replayed.
  // merge-compaction checks a replay against bronze at any age, so it cannot land twice.
  const replayLimits: Partial<ValidationLimits> = { ...options.limits, maxAgeMs: Infinity };
  return {
    check(value, headers, receivedAt) {
      const header = headers[HEADERS.contract]?.toString('utf8');
      const limits = replayMarkerOf(headers) === undefined ? options.limits : replayLimits;
      // The time rules judge the event as of when it was received, as ingest did: judged at
      // processing time, an event ingest accepted near the age limit was dead-lettered once
      // validate lagged behind it, and a retry after an abort could route it otherwise than the
      // first attempt. Never later than this clock (a record stamped in the future gains nothing).
      const at = receivedAt !== undefined && Number.isFinite(receivedAt) && receivedAt > 0 ? Math.min(receivedAt, now()) : now();
      const decoded = decodeEvent(value, { contract: header, now: at, limits, avro: options.avro });
      if (!decoded.ok) return { ok: false, contract: decoded.contract, issues: decoded.issues };
      const contract = decoded.contract;
      return {
        ok: true,
        contract: decoded.name,
        key: contract.entityKey(decoded.event as never),
        topic: options.validTopicPrefix + validTopicName(decoded.name),
        value: encodeSingleObject(contract.latest.schema, decoded.event),
      };
    },
  };
}
