import { createTelemetry } from '@sluice/telemetry';
import { Writable } from 'node:stream';
import type { Freshness } from './query-service';
import { servedMetrics } from './served-metrics';

const quiet = () => new Writable({ write: (_c, _e, done) => done() });
const freshness = (version: number, maxEventTime: string | null): Freshness => ({
  table: 'silver_orders',
  version,
  commitTime: '2026-12-03T06:00:10.000Z',
  maxEventTime,
  offsets: {},
  pending: null,
});

describe('servedMetrics', () => {
  it('sets the served version and records how old the newest event was when first served, once per newer event', async () => {
    const t = createTelemetry({ service: 'query-api', logDestination: quiet() });
    let now = Date.parse('2026-12-03T06:00:12.000Z');
    const onAnswer = servedMetrics(t.metrics, () => now);
    try {
      onAnswer(freshness(4, '2026-12-03T06:00:09.500Z')); // 2.5 s old when first served
      now += 60_000;
      onAnswer(freshness(4, '2026-12-03T06:00:09.500Z')); // the same version again: nothing more
      onAnswer(freshness(5, '2026-12-03T06:00:09.500Z')); // a compaction: no newer event, nothing
      onAnswer(freshness(6, null)); // no event-time statistics: the version gauge only
      const text = await t.metricsText();
      expect(text).toMatch(/^sluice_query_api_table_version\{table="silver_orders"\} 6$/m);
      expect(text).toMatch(/^sluice_query_api_freshness_seconds_count\{table="silver_orders"\} 1$/m);
      expect(text).toMatch(/^sluice_query_api_freshness_seconds_sum\{table="silver_orders"\} 2\.5$/m);
    } finally {
      await t.shutdown();
    }
  });

  it('keeps recording past an event time ahead of the clock', async () => {
    const t = createTelemetry({ service: 'query-api', logDestination: quiet() });
    let now = Date.parse('2026-12-03T06:00:00.000Z');
    const onAnswer = servedMetrics(t.metrics, () => now);
    try {
      // An event 4 min ahead stays the table's newest until the clock passes it: each newer
      // version counts as fresh now (0 s); taken as is, nothing was recorded for those 4 minutes.
      for (let v = 1; v <= 3; v++) {
        onAnswer(freshness(v, '2026-12-03T06:04:00.000Z'));
        now += 10_000;
      }
      now = Date.parse('2026-12-03T06:05:00.000Z');
      onAnswer(freshness(4, '2026-12-03T06:04:58.500Z')); // past it: 1.5 s old
      const text = await t.metricsText();
      expect(text).toMatch(/^sluice_query_api_freshness_seconds_count\{table="silver_orders"\} 4$/m);
      expect(text).toMatch(/^sluice_query_api_freshness_seconds_sum\{table="silver_orders"\} 1\.5$/m);
    } finally {
      await t.shutdown();
    }
  });
});
