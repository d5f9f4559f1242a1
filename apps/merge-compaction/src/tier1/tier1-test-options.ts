import { AvroDecoder, CONTRACTS } from '@sluice/contracts';
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
    ...o.overrides,
  };
}
