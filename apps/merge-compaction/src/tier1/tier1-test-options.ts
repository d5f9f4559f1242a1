import { AvroDecoder, CONTRACTS, encodeSingleObject } from '@sluice/contracts';
import type { ConsumedMessage } from '@sluice/kafka';
import type { Telemetry } from '@sluice/telemetry';
import type { BronzeStore } from './bronze-store';
import { DeadLetters } from './dead-letters';
import type { Tier1ConsumerFactory, Tier1Options } from './tier1-worker';

/**
 * Options of a Tier1Worker for unit tests: the orders contract on `topic`, a scripted consumer,
 * a partial store (only what the test's path calls), no dedup watermark. Used by tests only.
 */
export function tier1TestOptions(o: {
  topic: string;
  telemetry: Telemetry;
  store: Partial<BronzeStore>;
  createConsumer: Tier1ConsumerFactory;
  overrides?: Partial<Tier1Options>;
}): Tier1Options {
  const orders = CONTRACTS.orders;
  return {
    contracts: [orders],
    contractOfTopic: new Map([[o.topic, orders]]),
    decoder: new AvroDecoder([orders]),
    store: o.store as BronzeStore,
    deadLetters: new DeadLetters(async () => undefined, 'test.dlq'),
    createConsumer: o.createConsumer,
    bounds: { maxMs: 100, maxBytes: 1 << 20, maxRecords: 100 },
    maxBufferedBytes: 1 << 20,
    dedupWatermarkMs: 0,
    dedupMaxIds: 1000,
    retryMaxMs: 100,
    logger: o.telemetry.logger,
    metrics: o.telemetry.metrics,
    tableName: (table) => table,
    ...o.overrides,
  };
}

/** An orders upsert (schema v1) at `offset` of partition 0 of `topic`, as the consumer hands it over. */
export function orderMessage(topic: string, offset: number): ConsumedMessage {
  return consumedAt(topic, offset, encodeSingleObject(CONTRACTS.orders.versions[0].schema, {
    ...envelopeAt('e', offset, 1),
    order_id: `o-${offset}`,
    payload: { customer_id: 'c', status: 'created', total_cents: offset, currency: 'EUR', item_count: 1 },
  }));
}

/** A clickstream event (schema v1) at `offset` of partition 0 of `topic`, as the consumer hands it over. */
export function clickMessage(topic: string, offset: number): ConsumedMessage {
  return consumedAt(topic, offset, encodeSingleObject(CONTRACTS.clickstream.versions[0].schema, {
    ...envelopeAt('c', offset, 0),
    user_id: `u-${offset}`,
    payload: { session_id: 's', event_type: 'click', page: '/', referrer: null, duration_ms: null },
  }));
}

/** The envelope of a test event at `offset` (its id `<idPrefix>-<offset>`, a second apart). */
function envelopeAt(idPrefix: string, offset: number, version: number) {
  return { event_id: `${idPrefix}-${offset}`, event_time: Date.UTC(2026, 10, 30, 12, 0, offset), producer: 'p', schema_version: 1, version, op: 'upsert' };
}

function consumedAt(topic: string, offset: number, value: Buffer): ConsumedMessage {
  return { topic, partition: 0, offset, key: null, value, headers: {}, size: value.length };
}

/** {@link orderMessage} for offsets [from, to). */
export function orderMessages(topic: string, from: number, to: number): ConsumedMessage[] {
  return Array.from({ length: to - from }, (_, i) => orderMessage(topic, from + i));
}

/** Waits in 5 ms steps, up to 2.5 s, until `ok()`; throws naming `what` when it never is. */
export async function until(what: string, ok: () => boolean): Promise<void> {
  return untilAsync(what, async () => ok());
}

/** {@link until} for a check that must await. */
export async function untilAsync(what: string, ok: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  if (!(await ok())) throw new Error(`timed out waiting for ${what}`);
}
