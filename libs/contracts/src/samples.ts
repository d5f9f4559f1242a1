/**
 * Valid example events in producer JSON form (ISO timestamps), one builder per contract, for
 * tests, benchmarks and generators across the workspace. `n` varies the ids deterministically;
 * `time` is the event time in epoch ms (default: now).
 */

/** A valid orders event (schema v2) as a producer sends it. */
export function sampleOrderJson(n = 1, time = Date.now(), overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event_id: `ord-evt-${n}`,
    event_time: new Date(time).toISOString(),
    producer: 'shop-backend',
    schema_version: 2,
    version: n,
    op: 'upsert',
    order_id: `order-${n % 100_000}`,
    payload: {
      customer_id: `cust-${n % 5_000}`,
      status: 'paid',
      total_cents: 1999 + (n % 1000),
      currency: 'EUR',
      item_count: 1 + (n % 7),
      coupon_code: n % 10 === 0 ? 'WELCOME10' : null,
    },
    ...overrides,
  };
}

/** A valid inventory event as a producer sends it. */
export function sampleInventoryJson(n = 1, time = Date.now(), overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event_id: `inv-evt-${n}`,
    event_time: new Date(time).toISOString(),
    producer: 'wms',
    schema_version: 1,
    version: n,
    op: 'upsert',
    sku: `sku-${n % 10_000}`,
    warehouse_id: `wh-${n % 4}`,
    payload: { on_hand: 100 + (n % 50), reserved: n % 50 },
    ...overrides,
  };
}

/** A valid clickstream event as a producer sends it. */
export function sampleClickJson(n = 1, time = Date.now(), overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    event_id: `clk-evt-${n}`,
    event_time: new Date(time).toISOString(),
    producer: 'web',
    schema_version: 1,
    version: 0,
    op: 'upsert',
    user_id: `user-${n % 20_000}`,
    payload: {
      session_id: `sess-${Math.floor(n / 10)}`,
      event_type: 'page_view',
      page: `/products/${n % 300}`,
      referrer: null,
      duration_ms: n % 5000,
    },
    ...overrides,
  };
}
