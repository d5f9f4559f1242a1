import { queryError } from '../errors';
import type { AsOf, WaitFor } from '../query/query-types';

/** Query-string parameters shared by the GET routes: time travel and read-your-writes. */
export interface ReadOptionsQuery {
  asOfVersion?: string;
  asOfTimestamp?: string;
  waitVersion?: string;
  waitOffsets?: string;
  waitTimeoutMs?: string;
}

/** JSON schema of {@link ReadOptionsQuery}; values stay strings and are parsed below. */
export const readOptionsQuerySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    asOfVersion: { type: 'string', pattern: '^\\d{1,15}$', description: 'read this table version' },
    asOfTimestamp: { type: 'string', format: 'date-time', description: 'read the last version committed at or before this time' },
    waitVersion: { type: 'string', pattern: '^\\d{1,15}$', description: 'wait until the table reaches this version' },
    waitOffsets: {
      type: 'string',
      maxLength: 16_384,
      pattern: '^[^,]+:-?\\d{1,19}(,[^,]+:-?\\d{1,19})*$',
      description: 'wait until each txn appId reaches its offset: appId:offset,appId:offset',
    },
    waitTimeoutMs: { type: 'string', pattern: '^\\d{1,5}$', description: 'longest wait in ms (≤ 60000)' },
  },
} as const;

/** Parses the shared GET parameters; throws QUERY_VALUE_INVALID. */
export function parseReadOptions(q: ReadOptionsQuery): { asOf?: AsOf; waitFor?: WaitFor } {
  if (q.asOfVersion !== undefined && q.asOfTimestamp !== undefined) {
    throw queryError('QUERY_SHAPE_INVALID', 'give asOfVersion or asOfTimestamp, not both');
  }
  const asOf: AsOf | undefined =
    q.asOfVersion !== undefined ? { version: Number(q.asOfVersion) } : q.asOfTimestamp !== undefined ? { timestamp: q.asOfTimestamp } : undefined;
  let waitFor: WaitFor | undefined;
  if (q.waitVersion !== undefined || q.waitOffsets !== undefined) {
    waitFor = {};
    if (q.waitVersion !== undefined) waitFor.version = Number(q.waitVersion);
    if (q.waitOffsets !== undefined) {
      // No prototype: an app id `__proto__` is a key like any other, not a setter that drops it.
      waitFor.offsets = Object.create(null) as Record<string, number>;
      for (const pair of q.waitOffsets.split(',')) {
        const at = pair.lastIndexOf(':');
        const offset = Number(pair.slice(at + 1));
        if (!Number.isSafeInteger(offset)) throw queryError('QUERY_VALUE_INVALID', `offset in ${JSON.stringify(pair)}`);
        waitFor.offsets[pair.slice(0, at)] = offset;
      }
    }
    if (q.waitTimeoutMs !== undefined) {
      waitFor.timeoutMs = Number(q.waitTimeoutMs);
      if (waitFor.timeoutMs > 60_000) throw queryError('QUERY_VALUE_INVALID', 'waitTimeoutMs must be ≤ 60000');
    }
  } else if (q.waitTimeoutMs !== undefined) {
    throw queryError('QUERY_SHAPE_INVALID', 'waitTimeoutMs needs waitVersion or waitOffsets');
  }
  return { asOf, waitFor };
}
