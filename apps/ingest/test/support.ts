import { randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '@sluice/config';
import { BatchConsumer, KafkaAdmin, type ConsumedMessage } from '@sluice/kafka';
import type { Telemetry } from '@sluice/telemetry';
import { ingestConfigSchema } from '../src/config';
import { createIngest, type IngestRuntime } from '../src/runtime';

export { testBrokers, testSecureKafka } from '@sluice/testing';

export function randomName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export async function createTopics(brokers: string, names: string[], partitions = 3): Promise<void> {
  const admin = new KafkaAdmin({ brokers, clientId: 'ingest-test-admin' });
  try {
    for (const name of names) await admin.createTopic({ name, partitions });
  } finally {
    await admin.close();
  }
}

/**
 * Reads `topic` from the start under read_committed until at least `expected` records arrived,
 * then keeps polling `settleMs` more so duplicates would show up too.
 */
export async function readTopic(brokers: string, topic: string, expected: number, timeoutMs = 30_000, settleMs = 1000): Promise<ConsumedMessage[]> {
  const consumer = new BatchConsumer({ brokers, groupId: randomName('reader'), topics: [topic], maxBatchMessages: 5000, maxBatchWaitMs: 200 });
  await consumer.connect();
  const out: ConsumedMessage[] = [];
  try {
    const deadline = Date.now() + timeoutMs;
    while (out.length < expected && Date.now() < deadline) out.push(...(await consumer.poll()));
    const settle = Date.now() + settleMs;
    while (Date.now() < settle) out.push(...(await consumer.poll()));
  } finally {
    await consumer.close();
  }
  return out;
}

export function order(overrides: Record<string, unknown> = {}, payload: Record<string, unknown> = {}): Record<string, unknown> {
  const id = randomUUID();
  return {
    contract: 'orders',
    event_id: `evt-${id}`,
    event_time: new Date().toISOString(),
    producer: 'shop',
    schema_version: 2,
    version: 1,
    op: 'upsert',
    order_id: `o-${id.slice(0, 8)}`,
    payload: { customer_id: 'c-1', status: 'paid', total_cents: 1999, currency: 'EUR', item_count: 2, coupon_code: null, ...payload },
    ...overrides,
  };
}

export function inventory(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contract: 'inventory',
    event_id: `evt-${randomUUID()}`,
    event_time: new Date().toISOString(),
    producer: 'wms',
    schema_version: 1,
    version: 3,
    op: 'upsert',
    sku: `sku-${randomBytes(3).toString('hex')}`,
    warehouse_id: 'w-1',
    payload: { on_hand: 10, reserved: 2 },
    ...overrides,
  };
}

export function click(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contract: 'clickstream',
    event_id: `evt-${randomUUID()}`,
    event_time: new Date().toISOString(),
    producer: 'web',
    schema_version: 1,
    version: 0,
    op: 'upsert',
    user_id: `u-${randomBytes(3).toString('hex')}`,
    payload: { session_id: 's-1', event_type: 'page_view', page: '/home', referrer: null, duration_ms: null },
    ...overrides,
  };
}

export const KEYS = {
  // The envelope producers of order(), inventory() and click(); the orders key sends as the shop only.
  all: { producer: 'all-producer', key: 'k-all-0123456789abcdefghijklmnop', contracts: ['*'], envelopeProducers: ['shop', 'wms', 'web'] },
  orders: { producer: 'orders-only', key: 'k-orders-0123456789abcdefghijklm', contracts: ['orders'], envelopeProducers: ['shop'] },
};

export function ingestEnv(brokers: string, rawTopic: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: brokers,
    INGEST_RAW_TOPIC: rawTopic,
    INGEST_API_KEYS: JSON.stringify(Object.values(KEYS)),
    INGEST_MAX_BODY_BYTES: String(256 * 1024),
    INGEST_MAX_BATCH_EVENTS: '100',
    INGEST_MAX_EVENT_BYTES: String(16 * 1024),
    LOG_LEVEL: 'warn',
    ...extra,
  };
}

/**
 * A running ingest on a free loopback port with the test environment ({@link ingestEnv}) plus
 * `extra`, producing to `rawTopic` on `brokers`; the caller closes `ingest`.
 */
export async function startIngest(
  brokers: string,
  rawTopic: string,
  extra: Record<string, string> = {},
  telemetry?: Pick<Telemetry, 'metrics' | 'withSpan'>,
): Promise<{ ingest: IngestRuntime; url: string }> {
  const ingest = await createIngest(loadConfig(ingestConfigSchema, ingestEnv(brokers, rawTopic, extra)), undefined, telemetry);
  return { ingest, url: await ingest.app.listen({ host: '127.0.0.1', port: 0 }) };
}

