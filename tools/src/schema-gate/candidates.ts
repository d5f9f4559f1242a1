import { ORDERS_V2 } from '@sluice/contracts';

// Candidate next versions of the orders schema, each a real change engineers make, used by the
// gate's tests (unit, CLI and against the registry).

type Field = { name: string; type: unknown; default?: unknown; aliases?: string[]; doc?: string };
type Record_ = { type: 'record'; name: string; fields: Field[] };

function clone(): Record_ {
  return JSON.parse(JSON.stringify(ORDERS_V2)) as Record_;
}

function payloadOf(schema: Record_): Record_ {
  const field = schema.fields.find((f) => f.name === 'payload') as Field;
  return (field.type as unknown[])[1] as Record_;
}

/** Edits the payload record of a copy of orders v2. */
function editPayload(edit: (payload: Record_) => void): Record_ {
  const schema = clone();
  edit(payloadOf(schema));
  return schema;
}

/** Named candidates: the schema and which levels it must break. */
export const CANDIDATES = {
  /** coupon_code (optional, v2) removed: Avro-compatible both ways, but v2 producers' coupons would be dropped. */
  removeOptionalField: editPayload((p) => {
    p.fields = p.fields.filter((f) => f.name !== 'coupon_code');
  }),
  /** A new optional field with a default: compatible both ways. */
  addOptionalField: editPayload((p) => p.fields.push({ name: 'gift_note', type: ['null', 'string'], default: null })),
  /** A required field removed, no default anywhere: old readers cannot fill it (FORWARD breaks). */
  removeRequiredField: editPayload((p) => {
    p.fields = p.fields.filter((f) => f.name !== 'currency');
  }),
  /** total_cents from long to string: neither side can read the other. */
  changeType: editPayload((p) => {
    (p.fields.find((f) => f.name === 'total_cents') as Field).type = 'string';
  }),
  /** customer_id renamed to buyer_id without an alias: the new reader finds no buyer_id in old data. */
  renameWithoutAlias: editPayload((p) => {
    (p.fields.find((f) => f.name === 'customer_id') as Field).name = 'buyer_id';
  }),
  /** The same rename with an alias: new readers read old data (BACKWARD), old readers still break. */
  renameWithAlias: editPayload((p) => {
    const f = p.fields.find((x) => x.name === 'customer_id') as Field;
    f.name = 'buyer_id';
    f.aliases = ['customer_id'];
  }),
  /** The "cancelled" status removed from the enum: old data with it cannot be read (BACKWARD breaks). */
  removeEnumSymbol: editPayload((p) => {
    const status = p.fields.find((f) => f.name === 'status') as Field;
    status.type = { ...(status.type as object), symbols: ['created', 'paid', 'shipped', 'delivered'] };
  }),
  /** A new required field without a default: new readers cannot read old data (BACKWARD breaks). */
  addRequiredField: editPayload((p) => p.fields.push({ name: 'channel', type: 'string' })),
  /** item_count from int to long: a widening new readers accept, old readers do not (FORWARD breaks). */
  widenIntToLong: editPayload((p) => {
    (p.fields.find((f) => f.name === 'item_count') as Field).type = 'long';
  }),
} as const;

/** Name of one candidate. */
export type CandidateName = keyof typeof CANDIDATES;
