import type { AvroValue } from '../avro/schema';
import { defineContract } from '../define';
import { eventSchema } from '../envelope';
import { issue } from '../reasons';
import { ENVELOPE_RULES, keyRule } from './common-rules';

const payloadV1 = {
  type: 'record',
  name: 'sluice.inventory.StockPayload',
  fields: [
    { name: 'on_hand', type: 'long', doc: 'Units physically in the warehouse, ≥ 0.' },
    { name: 'reserved', type: 'long', doc: 'Units promised to open orders, 0 ≤ reserved ≤ on_hand.' },
  ],
} as const;

/** Inventory schema version 1. */
export const INVENTORY_V1 = eventSchema(
  'sluice.inventory.StockEvent',
  [
    { name: 'sku', type: 'string' },
    { name: 'warehouse_id', type: 'string' },
  ],
  payloadV1,
  'Stock level of one SKU in one warehouse.',
);

/** An inventory event of the latest schema version. */
export type InventoryEvent = AvroValue<typeof INVENTORY_V1>;

/** The inventory contract: on-hand and reserved stock per SKU and warehouse (key `sku|warehouse_id`). */
export const inventory = defineContract<InventoryEvent>({
  name: 'inventory',
  doc: 'On-hand and reserved stock per SKU and warehouse.',
  kind: 'state',
  versions: [{ version: 1, schema: INVENTORY_V1 }],
  keyFields: ['sku', 'warehouse_id'],
  compatibility: 'FULL_TRANSITIVE',
  rules: [
    ...ENVELOPE_RULES,
    keyRule('sku'),
    keyRule('warehouse_id'),
    { path: 'payload.on_hand', min: 0, max: 1e12 },
    { path: 'payload.reserved', min: 0, max: 1e12 },
  ],
  checks: [
    (event) =>
      event.payload !== null && event.payload.reserved > event.payload.on_hand
        ? [issue('RULE_CROSS_FIELD', '/payload/reserved', 'reserved exceeds on_hand')]
        : [],
  ],
});
