import { encodeConfluent, encodeSingleObject, AvroDecoder } from './avro/codec';
import { CONTRACTS, inventory, orders, ORDERS_V1, ORDERS_V2 } from './contracts';
import { decodeEvent, validateEvent } from './decode';
import { sampleClickJson, sampleInventoryJson, sampleOrderJson } from './samples';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const DAY = 86_400_000;
const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe('decodeEvent', () => {
  it.each([
    ['orders', sampleOrderJson(7, NOW)],
    ['inventory', sampleInventoryJson(7, NOW)],
    ['clickstream', sampleClickJson(7, NOW)],
  ])('accepts a valid %s event from bytes, string and parsed JSON alike', (name, json) => {
    for (const input of [bytes(json), JSON.stringify(json), json]) {
      const result = decodeEvent(input, { contract: name, now: NOW });
      if (!result.ok) throw new Error(JSON.stringify(result.issues));
      expect(result.name).toBe(name);
      expect(result.event.event_time).toBe(NOW);
      expect(result.event.event_id).toBe(json.event_id);
    }
  });

  it('narrows the event type by contract name', () => {
    const result = decodeEvent(bytes(sampleOrderJson(3, NOW)), { contract: 'orders', now: NOW });
    if (!result.ok || result.name !== 'orders') throw new Error('expected an orders event');
    expect(result.event.payload?.total_cents).toBe(2002);
    expect(result.contract.entityKey(result.event)).toBe('order-3');
  });

  it('takes the contract from the body when no header names it, and strips that field', () => {
    const result = decodeEvent({ contract: 'inventory', ...sampleInventoryJson(1, NOW) }, { now: NOW });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.name).toBe('inventory');
    expect('contract' in result.event).toBe(false);
    expect(inventory.entityKey(result.event as never)).toBe('sku-1|wh-1');
  });

  it('reports a header and body that name different contracts', () => {
    const result = decodeEvent({ contract: 'inventory', ...sampleOrderJson(1, NOW) }, { contract: 'orders', now: NOW });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues.map((i) => i.code)).toEqual(['CONTRACT_MISMATCH']);
  });

  it('converts ISO-8601 with offsets and sub-millisecond fractions to epoch ms UTC', () => {
    const json = sampleOrderJson(1, NOW, { event_time: '2026-06-01T14:00:00.123456789+02:00' });
    const result = decodeEvent(json, { contract: 'orders', now: NOW });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.event.event_time).toBe(NOW + 123);
  });

  it('reads a v1 event into the latest shape, the new optional field defaulted', () => {
    const v1 = sampleOrderJson(1, NOW, { schema_version: 1 });
    delete (v1.payload as Record<string, unknown>).coupon_code;
    const result = decodeEvent(v1, { contract: 'orders', now: NOW });
    if (!result.ok || result.name !== 'orders') throw new Error(JSON.stringify(result));
    expect(result.writerVersion).toBe(1);
    expect(result.event.payload?.coupon_code).toBeNull();
    expect(result.event.schema_version).toBe(1);
  });

  it('rejects a v2 field in an event that declares v1 (unknown fields are never dropped silently)', () => {
    const result = decodeEvent(sampleOrderJson(10, NOW, { schema_version: 1 }), { contract: 'orders', now: NOW });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.issues).toEqual([expect.objectContaining({ code: 'EVENT_FIELD_UNKNOWN', path: '/payload/coupon_code' })]);
  });

  it('accepts a delete tombstone without payload and rejects one with a payload', () => {
    const tombstone = sampleOrderJson(1, NOW, { op: 'delete', payload: null });
    expect(decodeEvent(tombstone, { contract: 'orders', now: NOW }).ok).toBe(true);
    const { payload: _omit, ...absent } = tombstone;
    expect(decodeEvent(absent, { contract: 'orders', now: NOW }).ok).toBe(true);
    const withPayload = decodeEvent(sampleOrderJson(1, NOW, { op: 'delete' }), { contract: 'orders', now: NOW });
    expect(!withPayload.ok && withPayload.issues.map((i) => i.code)).toEqual(['RULE_OP_PAYLOAD']);
  });

  it('decodes Avro single-object bytes without any registry, validating the rules too', () => {
    const ok = decodeEvent(bytes(sampleOrderJson(5, NOW)), { contract: 'orders', now: NOW });
    if (!ok.ok) throw new Error('fixture invalid');
    const framed = encodeSingleObject(orders.latest.schema, ok.event);
    const again = decodeEvent(framed, { now: NOW });
    expect(again.ok && again.event).toEqual(ok.event);
    const negative = encodeSingleObject(orders.latest.schema, { ...ok.event, payload: { ...ok.event.payload, total_cents: -1 } });
    const bad = decodeEvent(negative, { now: NOW });
    expect(!bad.ok && bad.issues.map((i) => i.code)).toEqual(['RULE_RANGE']);
  });

  it('refuses an Avro field its schema_version does not declare, and an undeclared version, as JSON would be refused', () => {
    const ok = decodeEvent(bytes(sampleOrderJson(5, NOW)), { contract: 'orders', now: NOW });
    if (!ok.ok || ok.name !== 'orders') throw new Error('fixture invalid');
    // Written with v2's schema, coupon_code set, but declaring v1; and a version that does not exist.
    const claimsV1 = decodeEvent(encodeSingleObject(orders.latest.schema, { ...ok.event, schema_version: 1, payload: { ...ok.event.payload, coupon_code: 'X' } }), { now: NOW });
    expect(claimsV1).toMatchObject({ ok: false, contract: 'orders', issues: [{ code: 'EVENT_FIELD_UNKNOWN', path: '/payload/coupon_code' }] });
    const asJson = decodeEvent(bytes({ ...sampleOrderJson(5, NOW), schema_version: 1, payload: { ...(sampleOrderJson(5, NOW).payload as object), coupon_code: 'X' } }), { contract: 'orders', now: NOW });
    expect(!asJson.ok && asJson.issues.map((i) => `${i.code} ${i.path}`)).toEqual(['EVENT_FIELD_UNKNOWN /payload/coupon_code']);
    const claims99 = decodeEvent(encodeSingleObject(orders.latest.schema, { ...ok.event, schema_version: 99 }), { now: NOW });
    expect(claims99).toMatchObject({ ok: false, contract: 'orders', issues: [{ code: 'SCHEMA_VERSION_UNKNOWN', path: '/schema_version' }] });
    // Other issues are still reported beside it.
    const negative = encodeSingleObject(orders.latest.schema, { ...ok.event, schema_version: 1, payload: { ...ok.event.payload, coupon_code: 'X', total_cents: -1 } });
    const both = decodeEvent(negative, { now: NOW });
    expect(!both.ok && both.issues.map((i) => i.code)).toEqual(['EVENT_FIELD_UNKNOWN', 'RULE_RANGE']);
  });

  it("accepts validate's own form of a v1 event: the latest schema, schema_version 1, the v2 field null (a replayed dead letter)", () => {
    const json = sampleOrderJson(5, NOW, { schema_version: 1 });
    delete (json.payload as Record<string, unknown>).coupon_code;
    const v1 = decodeEvent(bytes(json), { contract: 'orders', now: NOW });
    if (!v1.ok || v1.name !== 'orders') throw new Error(JSON.stringify(v1));
    expect(v1.event.payload?.coupon_code).toBeNull();
    const onTheValidTopic = encodeSingleObject(orders.latest.schema, v1.event);
    const again = decodeEvent(onTheValidTopic, { now: NOW });
    if (!again.ok) throw new Error(JSON.stringify(again.issues));
    expect(again.event).toEqual(v1.event);
    expect(again.writerVersion).toBe(1);
    // And a v1 writer declaring v2 is a v2 event without the optional field, as in JSON.
    const v1Writer = encodeSingleObject(ORDERS_V1, { ...v1.event, schema_version: 2, payload: { ...v1.event.payload, coupon_code: undefined } });
    expect(decodeEvent(v1Writer, { now: NOW }).ok).toBe(true);
  });

  it('refuses Avro written with a registry schema outside the contract history instead of dropping its new field', () => {
    const ok = decodeEvent(bytes(sampleOrderJson(5, NOW)), { contract: 'orders', now: NOW });
    if (!ok.ok || ok.name !== 'orders') throw new Error('fixture invalid');
    // A producer's own "v3" with one optional field more, readable by the v2 reader schema.
    const v3 = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown; default?: unknown }[] };
    v3.fields.push({ name: 'gift_wrap', type: ['null', 'string'], default: null });
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    decoder.addSchemaId(43, orders, JSON.stringify(v3));
    const r = decodeEvent(encodeConfluent(43, v3 as never, { ...ok.event, schema_version: 3, gift_wrap: 'red paper' }), { now: NOW, avro: decoder });
    expect(r).toMatchObject({ ok: false, contract: 'orders', issues: [{ code: 'SCHEMA_VERSION_UNKNOWN', path: '' }] });
    // The repository's own v2, registered under another id, is accepted.
    decoder.addSchemaId(44, orders, JSON.stringify(ORDERS_V2));
    expect(decodeEvent(encodeConfluent(44, ORDERS_V2, ok.event), { now: NOW, avro: decoder }).ok).toBe(true);
  });

  it('refuses Avro of a contract that accepts JSON only, naming the contract', () => {
    const ok = decodeEvent(bytes(sampleOrderJson(5, NOW)), { contract: 'orders', now: NOW });
    if (!ok.ok) throw new Error('fixture invalid');
    const framed = encodeSingleObject(orders.latest.schema, ok.event);
    expect(orders.acceptsAvro).toBe(true);
    const jsonOnly = new AvroDecoder([{ ...orders, acceptsAvro: false }]);
    const refused = decodeEvent(framed, { now: NOW, avro: jsonOnly });
    expect(refused).toMatchObject({ ok: false, contract: 'orders', issues: [{ code: 'AVRO_NOT_ACCEPTED' }] });
    expect(decodeEvent(framed, { now: NOW, avro: new AvroDecoder([orders]) }).ok).toBe(true);
  });

  it('decodes Confluent-framed bytes once the decoder knows the schema id', () => {
    const ok = decodeEvent(sampleOrderJson(5, NOW), { contract: 'orders', now: NOW });
    if (!ok.ok || ok.name !== 'orders') throw new Error('fixture invalid');
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const v1Event = { ...ok.event, schema_version: 1, payload: { ...ok.event.payload, coupon_code: undefined } };
    delete (v1Event.payload as Record<string, unknown>).coupon_code;
    const framed = encodeConfluent(42, ORDERS_V1, v1Event);
    const unknown = decodeEvent(framed, { now: NOW, avro: decoder });
    expect(!unknown.ok && unknown.issues.map((i) => i.code)).toEqual(['AVRO_WRITER_UNKNOWN']);
    decoder.addSchemaId(42, orders, JSON.stringify(ORDERS_V1));
    const known = decodeEvent(framed, { now: NOW, avro: decoder });
    if (!known.ok || known.name !== 'orders') throw new Error(JSON.stringify(known));
    expect(known.event.payload?.coupon_code).toBeNull();
    expect(known.event.order_id).toBe(ok.event.order_id);
  });

  it('validateEvent checks typed values (epoch ms timestamps) with the same rules', () => {
    const ok = decodeEvent(sampleInventoryJson(1, NOW), { contract: 'inventory', now: NOW });
    if (!ok.ok) throw new Error('fixture invalid');
    expect(validateEvent(inventory, ok.event, { now: NOW }).ok).toBe(true);
    const overReserved = validateEvent(inventory, { ...ok.event, payload: { on_hand: 1, reserved: 2 } }, { now: NOW });
    expect(!overReserved.ok && overReserved.issues).toEqual([expect.objectContaining({ code: 'RULE_CROSS_FIELD', path: '/payload/reserved' })]);
    const isoInTyped = validateEvent(inventory, { ...ok.event, event_time: '2026-06-01T12:00:00Z' }, { now: NOW });
    expect(!isoInTyped.ok && isoInTyped.issues.map((i) => i.code)).toEqual(['EVENT_SCHEMA_MISMATCH']);
    // Typed timestamps span what the ISO form can say: 1970 to 9999-12-31T23:59:59.999Z.
    const codesAt = (event_time: number) => {
      const r = validateEvent(inventory, { ...ok.event, event_time }, { now: event_time });
      return r.ok ? [] : r.issues.map((i) => i.code);
    };
    expect(codesAt(253_402_300_799_999)).toEqual([]);
    expect(codesAt(253_402_300_800_000)).toEqual(['RULE_TIMESTAMP_FORMAT']);
    expect(codesAt(Number.MAX_SAFE_INTEGER)).toEqual(['RULE_TIMESTAMP_FORMAT']);
    expect(codesAt(-1)).toEqual(['RULE_TIMESTAMP_FORMAT']);
  });

  it('applies configured clock-skew and age limits instead of the defaults', () => {
    const at = (offsetMs: number) => bytes(sampleOrderJson(1, NOW, { event_time: new Date(NOW + offsetMs).toISOString() }));
    const codes = (r: ReturnType<typeof decodeEvent>) => (r.ok ? [] : r.issues.map((i) => i.code));
    // Two minutes ahead, two days old: within the defaults (5 min, 7 days).
    expect(codes(decodeEvent(at(2 * 60_000), { contract: 'orders', now: NOW }))).toEqual([]);
    expect(codes(decodeEvent(at(-2 * DAY), { contract: 'orders', now: NOW }))).toEqual([]);
    const tight = { maxFutureSkewMs: 60_000, maxAgeMs: DAY };
    expect(codes(decodeEvent(at(2 * 60_000), { contract: 'orders', now: NOW, limits: tight }))).toEqual(['RULE_TIMESTAMP_FUTURE']);
    expect(codes(decodeEvent(at(-2 * DAY), { contract: 'orders', now: NOW, limits: tight }))).toEqual(['RULE_TIMESTAMP_EXPIRED']);
    // Limits are inclusive: exactly at the edge passes.
    expect(codes(decodeEvent(at(60_000), { contract: 'orders', now: NOW, limits: tight }))).toEqual([]);
    expect(codes(decodeEvent(at(-DAY), { contract: 'orders', now: NOW, limits: tight }))).toEqual([]);
    // A wider window lets an older event through; other limits keep their defaults.
    expect(codes(decodeEvent(at(-20 * DAY), { contract: 'orders', now: NOW }))).toEqual(['RULE_TIMESTAMP_EXPIRED']);
    expect(codes(decodeEvent(at(-20 * DAY), { contract: 'orders', now: NOW, limits: { maxAgeMs: 30 * DAY } }))).toEqual([]);
  });

  it('refuses, without throwing, an in-process value whose reading throws', () => {
    const ok = decodeEvent(sampleOrderJson(1, NOW), { contract: 'orders', now: NOW });
    if (!ok.ok) throw new Error('fixture invalid');
    const trap = new Proxy({}, { get: () => { throw new Error('trap'); }, has: () => { throw new Error('trap'); }, ownKeys: () => { throw new Error('trap'); }, getOwnPropertyDescriptor: () => { throw new Error('trap'); } });
    const getter = Object.defineProperty({ ...sampleOrderJson(1, NOW) }, 'event_id', { enumerable: true, get: () => { throw new Error('getter'); } });
    for (const value of [trap, getter]) {
      const decoded = decodeEvent(value, { contract: 'orders', now: NOW });
      expect(!decoded.ok && decoded.issues).toEqual([expect.objectContaining({ code: 'EVENT_NOT_OBJECT', path: '' })]);
      const validated = validateEvent(orders, value, { now: NOW });
      expect(!validated.ok && validated.issues.map((i) => i.code)).toEqual(['EVENT_NOT_OBJECT']);
    }
  });
});
