// Compile-time proof that the contract types follow their schemas. Not run by Jest: `tsc --noEmit`
// (the typecheck target) fails when a schema and its TypeScript type drift apart.
import type { AvroValue } from '../avro/schema';
import type { ClickEvent } from './clickstream';
import type { InventoryEvent } from './inventory';
import type { OrderEvent, OrderEventV1, ORDERS_V2 } from './orders';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

interface Envelope {
  event_id: string;
  event_time: number;
  producer: string;
  schema_version: number;
  version: number;
  op: 'upsert' | 'delete';
}

export type OrdersV1Shape = Expect<
  Equal<
    OrderEventV1,
    Envelope & {
      order_id: string;
      payload: {
        customer_id: string;
        status: 'created' | 'paid' | 'shipped' | 'delivered' | 'cancelled';
        total_cents: number;
        currency: string;
        item_count: number;
      } | null;
    } extends infer T
      ? { [K in keyof T]: T[K] }
      : never
  >
>;

export type OrdersV2AddsCoupon = Expect<Equal<NonNullable<OrderEvent['payload']>['coupon_code'], string | null>>;
export type OrdersV1HasNoCoupon = Expect<Equal<'coupon_code' extends keyof NonNullable<OrderEventV1['payload']> ? true : false, false>>;
export type OrderEventIsLatest = Expect<Equal<OrderEvent, AvroValue<typeof ORDERS_V2>>>;

export type InventoryShape = Expect<
  Equal<
    InventoryEvent,
    Envelope & { sku: string; warehouse_id: string; payload: { on_hand: number; reserved: number } | null } extends infer T
      ? { [K in keyof T]: T[K] }
      : never
  >
>;

export type ClickShape = Expect<
  Equal<
    ClickEvent,
    Envelope & {
      user_id: string;
      payload: {
        session_id: string;
        event_type: 'page_view' | 'click' | 'add_to_cart' | 'search' | 'checkout';
        page: string;
        referrer: string | null;
        duration_ms: number | null;
      } | null;
    } extends infer T
      ? { [K in keyof T]: T[K] }
      : never
  >
>;

// The mapped type itself, on each supported construct.
export type Primitives = Expect<
  Equal<[AvroValue<'null'>, AvroValue<'boolean'>, AvroValue<'int'>, AvroValue<'string'>], [null, boolean, number, string]>
>;
export type Nullable = Expect<Equal<AvroValue<readonly ['null', 'long']>, number | null>>;
export type Arrays = Expect<Equal<AvroValue<{ readonly type: 'array'; readonly items: 'string' }>, string[]>>;
export type Maps = Expect<Equal<AvroValue<{ readonly type: 'map'; readonly values: 'int' }>, Record<string, number>>>;

// @ts-expect-error a wrong field type must not type-check against the derived type
export const wrongType: OrderEvent['payload'] = { customer_id: 'c', status: 'paid', total_cents: '12', currency: 'EUR', item_count: 1, coupon_code: null };
// @ts-expect-error an enum symbol outside the schema must not type-check
export const wrongStatus: NonNullable<OrderEvent['payload']>['status'] = 'lost';
