/**
 * Single-core cost of validate's CPU work (decode + contract checks + Avro encode + routing),
 * without Kafka, next to a JSON.parse baseline of the same events in the same run.
 *
 *   npx tsx --tsconfig tsconfig.base.json apps/validate/bench/route-cpu.ts
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { processBatch } from '../src/pipeline/process-batch';
import { contractsForValidate } from '../src/routing/contracts-adapter';
import { checkWith } from '../src/routing/route';

const N = 2000;
const lines = Array.from({ length: N }, (_, i) =>
  JSON.stringify(
    i % 2 === 0
      ? { contract: 'orders', event_id: `evt-${randomUUID()}`, event_time: new Date().toISOString(), producer: 'bench', schema_version: 2, version: i, op: 'upsert', order_id: `o-${i}`, payload: { customer_id: `c-${i}`, status: 'paid', total_cents: 100 + i, currency: 'EUR', item_count: 1, coupon_code: null } }
      : { contract: 'clickstream', event_id: `evt-${randomUUID()}`, event_time: new Date().toISOString(), producer: 'bench', schema_version: 1, version: 0, op: 'upsert', user_id: `u-${i}`, payload: { session_id: 's', event_type: 'click', page: '/p', referrer: null, duration_ms: 5 } },
  ),
);
const contracts = contractsForValidate({ validTopicPrefix: '' });
const raw = lines.map((l, offset) => ({ topic: 'raw', partition: 0, offset, key: null, value: Buffer.from(l), headers: {} }));

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

const baseline = rate(() => {
  for (const l of lines) JSON.parse(l);
});
const route = rate(() => {
  const { counts } = processBatch(raw, checkWith(contracts), { dlqTopic: 'dlq', maxEventBytes: 1 << 20 }, Date.now());
  if (counts.valid !== N) throw new Error('not all valid');
});
console.log(
  JSON.stringify({
    when: new Date().toISOString(),
    loadavg: loadavg().map((l) => +l.toFixed(1)),
    eventsPerSecondOneCore: { jsonParseBaseline: Math.round(baseline), validateDecodeCheckEncode: Math.round(route) },
    ratioToBaseline: +(route / baseline).toFixed(3),
  }),
);
