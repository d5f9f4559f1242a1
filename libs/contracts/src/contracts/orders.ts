import type { AvroValue } from '../avro/schema';
import { defineContract } from '../define';
import { eventSchema } from '../envelope';
import { issue } from '../reasons';
import { ENVELOPE_RULES, TEXT_DESCRIPTION, TEXT_PATTERN, idRule, keyRule } from './common-rules';

/** Lifecycle states of an order: created → paid → shipped → delivered, or cancelled. */
export const ORDER_STATUSES = ['created', 'paid', 'shipped', 'delivered', 'cancelled'] as const;

const orderStatus = { type: 'enum', name: 'sluice.orders.OrderStatus', symbols: ORDER_STATUSES } as const;

const payloadV1 = {
  type: 'record',
  name: 'sluice.orders.OrderPayload',
  fields: [
    { name: 'customer_id', type: 'string', doc: 'Customer who placed the order.' },
    { name: 'status', type: orderStatus },
    { name: 'total_cents', type: 'long', doc: 'Order total in minor units of currency (cents), ≥ 0.' },
    { name: 'currency', type: 'string', doc: 'ISO-4217 code, three upper-case letters.' },
    { name: 'item_count', type: 'int', doc: 'Number of items, ≥ 0.' },
  ],
} as const;

const payloadV2 = {
  ...payloadV1,
  fields: [
    ...payloadV1.fields,
    { name: 'coupon_code', type: ['null', 'string'], default: null, doc: 'Coupon applied, if any (added in v2).' },
  ],
} as const;

/** Orders schema version 1. */
export const ORDERS_V1 = eventSchema('sluice.orders.OrderEvent', [{ name: 'order_id', type: 'string' }], payloadV1, 'An order lifecycle event.');
/** Orders schema version 2: adds the optional `payload.coupon_code` (default null). */
export const ORDERS_V2 = eventSchema('sluice.orders.OrderEvent', [{ name: 'order_id', type: 'string' }], payloadV2, 'An order lifecycle event.');

/** An orders event as written with schema version 1. */
export type OrderEventV1 = AvroValue<typeof ORDERS_V1>;
/** An orders event of the latest schema version (what decoders hand out). */
export type OrderEvent = AvroValue<typeof ORDERS_V2>;
/** One order status. */
export type OrderStatus = (typeof ORDER_STATUSES)[number];

/** The orders contract: state of each order, keyed by `order_id`. */
export const orders = defineContract<OrderEvent>({
  name: 'orders',
  doc: 'Order lifecycle (created → paid → shipped → delivered/cancelled), amounts and customer.',
  kind: 'state',
  versions: [
    { version: 1, schema: ORDERS_V1 },
    { version: 2, schema: ORDERS_V2 },
  ],
  keyFields: ['order_id'],
  compatibility: 'FULL_TRANSITIVE',
  rules: [
    ...ENVELOPE_RULES,
    keyRule('order_id'),
    idRule('payload.customer_id'),
    { path: 'payload.total_cents', min: 0, max: 1e13 },
    { path: 'payload.currency', pattern: /^[A-Z]{3}$/, patternDescription: 'three upper-case letters (ISO-4217)' },
    { path: 'payload.item_count', min: 0, max: 100_000 },
    { path: 'payload.coupon_code', minLength: 1, maxLength: 64, pattern: TEXT_PATTERN, patternDescription: TEXT_DESCRIPTION },
  ],
  checks: [
    (event) =>
      event.payload !== null && event.payload.status === 'created' && event.payload.item_count === 0
        ? [issue('RULE_CROSS_FIELD', '/payload/item_count', 'a created order has at least one item')]
        : [],
  ],
  aggregates: [
    {
      name: 'status_minute',
      windowMs: 60_000,
      groupBy: ['status'],
      measures: [
        { name: 'orders', fn: 'count' },
        { name: 'amount_cents', fn: 'sum', column: 'total_cents' },
      ],
    },
  ],
});
