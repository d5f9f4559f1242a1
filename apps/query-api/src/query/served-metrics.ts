import type { SluiceMetrics } from '@sluice/telemetry';
import type { Freshness } from './query-service';

/**
 * The metrics of the newest version answered per table (QueryService's `onAnswer`): the served
 * version gauge, and each time a newer event becomes visible, how old that newest event was
 * when query-api first answered with it (`freshness`: event time to served, the dashboard's
 * "freshness seen by query-api"). Versions that bring no newer event (a compaction, a fold of
 * late events) record nothing, nor do versions without event-time statistics. An event time
 * ahead of the clock (validate lets producers be up to 5 minutes ahead) counts as now, so each
 * newer version records 0 s until the clock passes it: taken as is, one such event held the mark
 * in the future and silenced the histogram for those minutes.
 */
export function servedMetrics(metrics: Pick<SluiceMetrics, 'tableVersion' | 'freshness'>, now: () => number = Date.now): (f: Freshness) => void {
  /** The newest event time recorded per table, epoch ms. */
  const recorded = new Map<string, number>();
  return (f) => {
    metrics.tableVersion.set(f.version, { table: f.table });
    const at = now();
    const newest = f.maxEventTime === null ? NaN : Math.min(Date.parse(f.maxEventTime), at);
    if (!(newest > (recorded.get(f.table) ?? -Infinity))) return;
    recorded.set(f.table, newest);
    metrics.freshness.record((at - newest) / 1000, { table: f.table });
  };
}
