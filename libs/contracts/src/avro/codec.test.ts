import avro from 'avsc';
import { CONTRACTS, orders, ORDERS_V1, ORDERS_V2 } from '../contracts';
import { decodeEvent } from '../decode';
import { sampleOrderJson } from '../samples';
import { AvroDecoder, avroTypeOf, encodeConfluent, encodeSingleObject, fingerprintOf, hex64, holdsReplacementChar, readFraming, resolveValue, resolverOf } from './codec';
import { canonicalForm, crc64Avro, fingerprint64 } from './fingerprint';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const u64 = (signed: string) => BigInt.asUintN(64, BigInt(signed));

function validOrder(n = 10) {
  const result = decodeEvent(sampleOrderJson(n, NOW), { contract: 'orders', now: NOW });
  if (!result.ok || result.name !== 'orders') throw new Error('fixture invalid');
  return result.event;
}

describe('CRC-64-AVRO fingerprints', () => {
  // Vectors from the Avro project's share/test/data/schema-tests.txt (signed Java longs).
  it.each([
    ['"null"', '7195948357588979594'],
    ['"boolean"', '-6970731678124411036'],
    ['"int"', '8247732601305521295'],
    ['"long"', '-3434872931120570953'],
    ['{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}', '7843277075252814651'],
    ['{"name":"foo","type":"record","fields":[]}', '-4824392279771201922'],
  ])('matches the Avro spec for %s', (canonical, signed) => {
    expect(crc64Avro(new TextEncoder().encode(canonical))).toBe(u64(signed));
  });

  it('fingerprints the parsing canonical form, ignoring docs, defaults and key order', () => {
    const messy = { fields: [{ type: 'boolean', name: 'f1', doc: 'x', default: true }], type: 'record', name: 'foo', doc: 'y' };
    expect(canonicalForm(messy)).toBe('{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}');
    expect(fingerprint64(messy)).toBe(u64('7843277075252814651'));
  });

  it('gives every version of every contract a distinct fingerprint', () => {
    const all = Object.values(CONTRACTS).flatMap((c) => c.versions.map((v) => hex64(fingerprintOf(v.schema))));
    expect(new Set(all).size).toBe(all.length);
  });
});

describe('framings', () => {
  it('writes single-object encoding as C3 01, the little-endian fingerprint, then the body', () => {
    const event = validOrder();
    const bytes = encodeSingleObject(ORDERS_V2, event);
    expect([...bytes.subarray(0, 2)]).toEqual([0xc3, 0x01]);
    expect(bytes.readBigUInt64LE(2)).toBe(fingerprint64(ORDERS_V2));
    expect(readFraming(bytes)).toEqual({ kind: 'single-object', fingerprint: hex64(fingerprint64(ORDERS_V2)) });
    expect(avroTypeOf(ORDERS_V2).fromBuffer(bytes.subarray(10))).toEqual(event);
  });

  it('writes the Confluent framing as 0x00 and a big-endian 4-byte schema id', () => {
    const bytes = encodeConfluent(0x01020304, ORDERS_V2, validOrder());
    expect([...bytes.subarray(0, 5)]).toEqual([0, 1, 2, 3, 4]);
    expect(readFraming(bytes)).toEqual({ kind: 'confluent', schemaId: 0x01020304 });
    expect(() => encodeConfluent(-1, ORDERS_V2, validOrder())).toThrow(RangeError);
  });

  it('encodes values larger than the scratch buffer, and later small ones correctly', () => {
    const schema = { type: 'record', name: 'test.Big', fields: [{ name: 's', type: 'string' }] } as const;
    const big = 'x'.repeat(300_000);
    const bytes = encodeSingleObject(schema, { s: big });
    expect(avroTypeOf(schema).fromBuffer(bytes.subarray(10))).toEqual({ s: big });
    const small = encodeConfluent(3, schema, { s: 'y' });
    expect(avroTypeOf(schema).fromBuffer(small.subarray(5))).toEqual({ s: 'y' });
    expect(small.length).toBe(5 + 2);
  });

  it('hands out messages that stay intact while later ones are encoded (many slabs)', () => {
    const type = avroTypeOf(ORDERS_V2);
    const events = Array.from({ length: 5_000 }, (_, i) => ({ ...validOrder(), version: i, order_id: `order-${i}-${'k'.repeat(i % 97)}` }));
    const messages = events.map((e) => encodeSingleObject(ORDERS_V2, e));
    messages.forEach((m, i) => expect(type.fromBuffer(m.subarray(10))).toEqual(events[i]));
  });

  it('recognises neither framing in JSON text', () => {
    expect(readFraming(new TextEncoder().encode('{"a":1}'))).toBeUndefined();
  });
});

describe('schema evolution through avsc resolvers', () => {
  it('reads v2 data (with the new optional field) with a v1 reader: the field is skipped', () => {
    const v2 = validOrder(10); // n % 10 === 0 → coupon present
    expect(v2.payload?.coupon_code).toBe('WELCOME10');
    const v1Type = avroTypeOf(ORDERS_V1);
    const read = v1Type.fromBuffer(avroTypeOf(ORDERS_V2).toBuffer(v2), v1Type.createResolver(avroTypeOf(ORDERS_V2))) as Record<string, Record<string, unknown>>;
    expect('coupon_code' in read.payload).toBe(false);
    expect(read.payload.total_cents).toBe(v2.payload?.total_cents);
  });

  it('reads v1 data with a v2 reader: the new field takes its default (null)', () => {
    const v1 = resolveValue(ORDERS_V2, ORDERS_V1, validOrder(10));
    const v2Type = avroTypeOf(ORDERS_V2);
    const read = v2Type.fromBuffer(avroTypeOf(ORDERS_V1).toBuffer(v1), v2Type.createResolver(avroTypeOf(ORDERS_V1))) as Record<string, Record<string, unknown>>;
    expect(read.payload.coupon_code).toBeNull();
  });

  it('builds the resolver of a schema pair once and reuses it for every value', () => {
    const v2Type = avroTypeOf(ORDERS_V2);
    resolveValue(ORDERS_V2, ORDERS_V1, validOrder(9)); // builds the pair's resolver, whatever ran before
    // avsc types are frozen: watch the method on the prototype they share (avsc also calls it
    // for every nested field and branch while building one resolver).
    const build = jest.spyOn(avro.Type.prototype, 'createResolver');
    try {
      const first = resolveValue(ORDERS_V2, ORDERS_V1, validOrder(10)) as { payload: Record<string, unknown> };
      const second = resolveValue(ORDERS_V2, ORDERS_V1, validOrder(11)) as { payload: Record<string, unknown> };
      expect(build).not.toHaveBeenCalled();
      expect(resolverOf(avroTypeOf(ORDERS_V1), v2Type)).toBe(resolverOf(avroTypeOf(ORDERS_V1), v2Type));
      // Values still differ per call: the cache holds the resolver, never a result.
      expect(first.payload.item_count).not.toEqual(second.payload.item_count);
      expect('coupon_code' in first.payload).toBe(false);
    } finally {
      build.mockRestore();
    }
  });

  it('decodes single-object v1 bytes into the latest shape and reports the writer version', () => {
    const v1 = resolveValue(ORDERS_V2, ORDERS_V1, validOrder(10));
    const result = new AvroDecoder(Object.values(CONTRACTS)).decode(encodeSingleObject(ORDERS_V1, v1));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.value.contract).toBe(orders);
    expect(result.value.writerVersion).toBe(1);
    expect((result.value.event as { payload: { coupon_code: unknown } }).payload.coupon_code).toBeNull();
  });

  it('decodes bytes of a writer schema that is in no repository version, when taught by id', () => {
    // A producer's v3 with an extra optional field: readable by the v2 reader.
    const v3 = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown }[] };
    v3.fields.push({ name: 'channel', type: ['null', 'string'], default: null } as never);
    const decoder = new AvroDecoder([orders]);
    decoder.addSchemaId(77, orders, JSON.stringify(v3));
    const event = { ...validOrder(), channel: 'app' };
    const result = decoder.decode(encodeConfluent(77, v3 as never, event));
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.value.writerVersion).toBeUndefined();
    expect('channel' in (result.value.event as object)).toBe(false);
  });

  it.each([
    ['an array', { type: 'array', items: 'string' }],
    ['a map', { type: 'map', values: 'long' }],
    ['an optional array', ['null', { type: 'array', items: 'null' }]],
  ])('refuses to learn a writer schema with %s field, whose item count avsc would trust', (_label, type) => {
    // Readable by the v2 reader (a field it skips), so schema resolution alone accepts it.
    const v3 = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown; default?: unknown }[] };
    v3.fields.push({ name: 'tags', type, default: Array.isArray(type) ? null : type.type === 'array' ? [] : {} });
    const decoder = new AvroDecoder([orders]);
    expect(() => decoder.addSchemaId(78, orders, JSON.stringify(v3))).toThrow(/array or map/);
    expect(decoder.knowsSchemaId(78)).toBe(false);
  });

  it.each([
    ['a bytes field where the contract reads a string', 'bytes', 'producer'],
    ['an optional bytes field where the contract reads an optional string', ['null', 'bytes'], 'coupon_code'],
    ['an extra bytes field', { type: 'bytes' }, 'blob'],
  ])('refuses to learn a writer schema with %s: avsc would turn invalid UTF-8 into U+FFFD', (_label, type, field) => {
    const v3 = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown; default?: unknown }[] };
    const at = (fields: { name: string; type: unknown }[]) => fields.find((f) => f.name === field);
    // payload is ['null', record] (null on a tombstone).
    const payload = (v3.fields.find((f) => f.name === 'payload')!.type as unknown[])[1] as { fields: { name: string; type: unknown }[] };
    const target = at(v3.fields) ?? at(payload.fields);
    if (target) target.type = type;
    else v3.fields.push({ name: field, type, default: '' });
    const decoder = new AvroDecoder([orders]);
    expect(() => decoder.addSchemaId(79, orders, JSON.stringify(v3))).toThrow(/bytes field is not accepted/);
    expect(decoder.knowsSchemaId(79)).toBe(false);
  });

  it('would pass invalid UTF-8 through a bytes-to-string promotion (why such writers are refused)', () => {
    const reader = avro.Type.forSchema({ type: 'record', name: 'R', fields: [{ name: 's', type: 'string' }] });
    const writer = avro.Type.forSchema({ type: 'record', name: 'R', fields: [{ name: 's', type: 'bytes' }] });
    const decoded = reader.fromBuffer(writer.toBuffer({ s: Buffer.from([0x61, 0xff, 0x62]) }), reader.createResolver(writer)) as { s: string };
    expect(decoded.s).toBe('a\uFFFDb');
  });

  it('finds U+FFFD in the string fields of a decoded event, nested and nullable ones too, reading only those fields', () => {
    const base = { ...validOrder(), payload: { ...(validOrder() as { payload: object }).payload, coupon_code: null } };
    expect(holdsReplacementChar(ORDERS_V2, base)).toBe(false);
    expect(holdsReplacementChar(ORDERS_V2, { ...base, producer: 'a\ufffd' })).toBe(true);
    expect(holdsReplacementChar(ORDERS_V2, { ...base, payload: { ...base.payload, coupon_code: 'x\ufffd' } })).toBe(true);
    // Compiled from the schema: a property the schema does not have is not read (the generic walk would).
    expect(holdsReplacementChar(ORDERS_V2, { ...base, extra: '\ufffd' })).toBe(false);
    // A schema it does not follow (a named reference) falls back to reading every value.
    const named = { type: 'record', name: 'R', fields: [{ name: 'a', type: 'R2' }] };
    expect(holdsReplacementChar(named, { a: { b: 'x\ufffd' } })).toBe(true);
    // So does a union avsc hands back wrapped ({"string": …}).
    const wrapped = { type: 'record', name: 'W', fields: [{ name: 'a', type: ['null', 'string', 'long'] }] };
    expect(holdsReplacementChar(wrapped, { a: { string: 'x\ufffd' } })).toBe(true);
  });

  it('keeps the avsc type for long timestamps as plain numbers (epoch ms)', () => {
    const type = avroTypeOf(ORDERS_V2) as avro.types.RecordType;
    expect(type.field('event_time')?.type.typeName).toBe('long');
  });
});
