/**
 * Single-core cost of ingest's CPU work (NDJSON split + per-event checks), without HTTP or Kafka,
 * next to a JSON.parse baseline of the same events in the same run (the machine is shared, so
 * only the ratio compares across runs).
 *
 *   npx tsx --tsconfig tsconfig.base.json apps/ingest/bench/edge-cpu.ts
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { DEFAULT_LIMITS } from '@sluice/contracts';
import { splitNdjson } from '../src/body/split';
import { checkEvent } from '../src/events/check-event';

const N = 2000;
const lines = Array.from({ length: N }, (_, i) =>
  JSON.stringify(
    i % 2 === 0
      ? { contract: 'orders', event_id: `evt-${randomUUID()}`, event_time: new Date().toISOString(), producer: 'bench', schema_version: 2, version: i, op: 'upsert', order_id: `o-${i}`, payload: { customer_id: `c-${i}`, status: 'paid', total_cents: 100 + i, currency: 'EUR', item_count: 1, coupon_code: null } }
      : { contract: 'clickstream', event_id: `evt-${randomUUID()}`, event_time: new Date().toISOString(), producer: 'bench', schema_version: 1, version: 0, op: 'upsert', user_id: `u-${i}`, payload: { session_id: 's', event_type: 'click', page: '/p', referrer: null, duration_ms: 5 } },
  ),
);
const body = Buffer.from(lines.join('\n'));
const principal = { producer: 'bench', mayUse: () => true, maySendAs: () => true };

/** Events per second of `fn` (which handles N events), over ~1.5 s after a warm-up. */
function rate(fn: () => void): number {
  for (let i = 0; i < 3; i++) fn();
  const started = performance.now();
  let runs = 0;
  while (performance.now() - started < 1500) {
    fn();
    runs++;
  }
  return (runs * N) / ((performance.now() - started) / 1000);
}

const LIMITS = { maxEventBytes: 1 << 20, maxDepth: 32, maxFutureSkewMs: DEFAULT_LIMITS.maxFutureSkewMs, maxEventAgeMs: DEFAULT_LIMITS.maxAgeMs };

const baseline = rate(() => {
  for (const l of lines) JSON.parse(l);
});
const edge = rate(() => {
  const split = splitNdjson(body, N);
  if (!split.ok) throw new Error('split failed');
  const now = Date.now();
  for (const s of split.events) if (!checkEvent(s, principal, undefined, LIMITS, now).ok) throw new Error('rejected');
});
console.log(
  JSON.stringify({
    when: new Date().toISOString(),
    loadavg: loadavg().map((l) => +l.toFixed(1)),
    eventsPerSecondOneCore: { jsonParseBaseline: Math.round(baseline), ingestSplitAndCheck: Math.round(edge) },
    ratioToBaseline: +(edge / baseline).toFixed(3),
  }),
);
