import type { SluiceMetrics } from '@sluice/telemetry';
import type { Freshness } from './query-service';

/**
 * The metrics of the newest version answered per table (QueryService's `onAnswer`): the served
 * version gauge, and once per version, how old its newest event was when query-api first
 * answered from it (`freshness`: event time to served, the dashboard's "freshness seen by
 * query-api"). A version without event-time statistics records no freshness.
 */
export function servedMetrics(metrics: Pick<SluiceMetrics, 'tableVersion' | 'freshness'>, now: () => number = Date.now): (f: Freshness) => void {
  /** The last version recorded per table: answers at the same version record nothing more. */
  const recorded = new Map<string, number>();
  return (f) => {
    metrics.tableVersion.set(f.version, { table: f.table });
    if (recorded.get(f.table) === f.version || f.maxEventTime === null) return;
    recorded.set(f.table, f.version);
    metrics.freshness.record(Math.max(0, now() - Date.parse(f.maxEventTime)) / 1000, { table: f.table });
  };
}
