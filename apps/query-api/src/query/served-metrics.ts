import type { SluiceMetrics } from '@sluice/telemetry';
import type { Freshness } from './query-service';

/**
 * The metrics of the newest version answered per table (QueryService's `onAnswer`): the served
 * version gauge, and each time a newer event becomes visible, how old that newest event was
 * when query-api first answered with it (`freshness`: event time to served, the dashboard's
 * "freshness seen by query-api"). Versions that bring no newer event (a compaction, a fold of
 * late events) record nothing, nor do versions without event-time statistics.
 */
export function servedMetrics(metrics: Pick<SluiceMetrics, 'tableVersion' | 'freshness'>, now: () => number = Date.now): (f: Freshness) => void {
  /** The newest event time recorded per table, epoch ms. */
  const recorded = new Map<string, number>();
  return (f) => {
    metrics.tableVersion.set(f.version, { table: f.table });
    const newest = f.maxEventTime === null ? NaN : Date.parse(f.maxEventTime);
    if (!(newest > (recorded.get(f.table) ?? -Infinity))) return;
    recorded.set(f.table, newest);
    metrics.freshness.record(Math.max(0, now() - newest) / 1000, { table: f.table });
  };
}
