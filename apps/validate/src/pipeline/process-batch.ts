import { routeWithCheck, type CheckResult, type RawMessage, type RouteOptions, type RoutedRecord } from '../routing/route';

/** Counts of one batch, for logs and metrics. */
export interface BatchCounts {
  valid: number;
  dlq: number;
  /** DLQ records by reason code. */
  byReason: Record<string, number>;
}

/** The contract check of the batch's `index`-th record (see routeWithCheck). */
export type BatchCheck = (msg: RawMessage, index: number) => CheckResult;

/**
 * Routes every record of a consumed batch, in order. The output has exactly one record per
 * input record — the invariant that makes "valid + DLQ = raw" hold once the transaction commits.
 */
export function processBatch(
  batch: readonly RawMessage[],
  check: BatchCheck,
  options: Omit<RouteOptions, 'now'>,
  now: number,
): { records: RoutedRecord[]; counts: BatchCounts } {
  const records: RoutedRecord[] = new Array(batch.length);
  const counts: BatchCounts = { valid: 0, dlq: 0, byReason: {} };
  const routeOptions: RouteOptions = { ...options, now };
  for (let i = 0; i < batch.length; i++) {
    const routed = routeWithCheck(batch[i], (m) => check(m, i), routeOptions);
    records[i] = routed;
    if (routed.outcome === 'valid') counts.valid++;
    else {
      counts.dlq++;
      const reason = routed.reason ?? 'unknown';
      counts.byReason[reason] = (counts.byReason[reason] ?? 0) + 1;
    }
  }
  return { records, counts };
}
