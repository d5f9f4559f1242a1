import fc from 'fast-check';
import { encodeSingleObject, SINGLE_OBJECT_MAGIC } from './avro/codec';
import { orders } from './contracts';
import { decodeEvent, MAX_ISSUES, type DecodeOptions } from './decode';
import { REASON_CODES, type ReasonCode } from './reasons';
import { sampleClickJson, sampleInventoryJson, sampleOrderJson } from './samples';

// Hostile input: the validator must return issues (every one, with code and path) and never throw.
const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const HOUR = 3_600_000;
const JSON_POINTER = /^(?:\/(?:[^/~]|~[01])*)*$/;
const ORDERS: DecodeOptions = { contract: 'orders', now: NOW };
const utf8 = (s: string) => new TextEncoder().encode(s);
const order = (overrides: Record<string, unknown> = {}) => sampleOrderJson(1, NOW, overrides);
const payload = (overrides: Record<string, unknown>) => order({ payload: { ...(order().payload as object), ...overrides } });
/** Valid order JSON text with `fragment` spliced in as the first member of the object. */
const splice = (fragment: string, into = JSON.stringify(order())) => `{${fragment},${into.slice(1)}`;
const intoPayload = (fragment: string) => JSON.stringify(order()).replace('"payload":{', `"payload":{${fragment},`);

type Case = [name: string, input: unknown, expected: ReasonCode[], options?: DecodeOptions];

const cases: Case[] = [
  // not JSON
  ['empty text', '', ['EVENT_NOT_JSON']],
  ['whitespace only', ' \n\t ', ['EVENT_NOT_JSON']],
  ['unclosed object', '{"event_id": "a"', ['EVENT_NOT_JSON']],
  ['trailing comma', '{"a": 1,}', ['EVENT_NOT_JSON']],
  ['single quotes', "{'a': 1}", ['EVENT_NOT_JSON']],
  ['two documents', '{"a": 1} {"b": 2}', ['EVENT_NOT_JSON']],
  ['bare NaN', 'NaN', ['EVENT_NOT_JSON']],
  ['NaN as value', '{"total_cents": NaN}', ['EVENT_NOT_JSON']],
  ['Infinity as value', '{"total_cents": Infinity}', ['EVENT_NOT_JSON']],
  ['-Infinity as value', '{"total_cents": -Infinity}', ['EVENT_NOT_JSON']],
  ['leading zero', '{"version": 01}', ['EVENT_NOT_JSON']],
  ['dangling decimal point', '{"version": 1.}', ['EVENT_NOT_JSON']],
  ['hex number', '{"version": 0x10}', ['EVENT_NOT_JSON']],
  ['raw control character in string', '{"event_id": "a\u0001b"}', ['EVENT_NOT_JSON']],
  ['invalid escape', '{"event_id": "a\\xb"}', ['EVENT_NOT_JSON']],
  ['unterminated string with escaped quote', '{"event_id": "a\\"}', ['EVENT_NOT_JSON']],
  ['comment', '// hi\n{}', ['EVENT_NOT_JSON']],
  ['JavaScript literal undefined', '{"payload": undefined}', ['EVENT_NOT_JSON']],
  // not an object
  ['array', '[]', ['EVENT_NOT_OBJECT']],
  ['null', 'null', ['EVENT_NOT_OBJECT']],
  ['string', '"orders"', ['EVENT_NOT_OBJECT']],
  ['number', '42', ['EVENT_NOT_OBJECT']],
  ['parsed array value', [order()], ['EVENT_NOT_OBJECT']],
  // bytes
  ['invalid UTF-8 byte 0xff', new Uint8Array([...utf8('{"event_id": "'), 0xff, ...utf8('"}')]), ['EVENT_NOT_UTF8']],
  ['overlong UTF-8 encoding of /', new Uint8Array([...utf8('{"page": "'), 0xc0, 0xaf, ...utf8('"}')]), ['EVENT_NOT_UTF8']],
  ['truncated multi-byte sequence', new Uint8Array([...utf8('{"a": "€'), 0xe2, 0x82]), ['EVENT_NOT_UTF8']],
  ['UTF-16LE text', new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), ['EVENT_NOT_UTF8']],
  ['CESU surrogate bytes', new Uint8Array([...utf8('{"a": "'), 0xed, 0xa0, 0x80, ...utf8('"}')]), ['EVENT_NOT_UTF8']],
  ['lone surrogate escape', splice('"event_id": "\\ud800"'), ['EVENT_NOT_UTF8', 'EVENT_DUPLICATE_KEY'], ORDERS],
  ['empty bytes', new Uint8Array(0), ['EVENT_NOT_JSON']],
  ['one zero byte', new Uint8Array([0]), ['AVRO_FRAMING_UNKNOWN']],
  ['Confluent header with unknown id', new Uint8Array([0, 0, 0, 0, 99, 2, 4]), ['AVRO_WRITER_UNKNOWN']],
  ['single-object header with unknown fingerprint', new Uint8Array([...SINGLE_OBJECT_MAGIC, 1, 2, 3, 4, 5, 6, 7, 8, 0]), ['AVRO_WRITER_UNKNOWN']],
  ['size over the limit', utf8(splice(`"x": "${'a'.repeat(1024 * 1024)}"`)), ['EVENT_TOO_LARGE'], ORDERS],
  // depth and size
  ['10,000 nested arrays', '['.repeat(10_000) + ']'.repeat(10_000), ['EVENT_TOO_DEEP']],
  ['deeply nested object in payload', intoPayload(`"x": ${'{"a":'.repeat(40)}1${'}'.repeat(40)}`), ['EVENT_TOO_DEEP'], ORDERS],
  ['200k-character event_id', order({ event_id: 'e'.repeat(200_000) }), ['RULE_LENGTH'], ORDERS],
  ['huge string in an unknown field', splice(`"junk": "${'x'.repeat(500_000)}"`), ['EVENT_FIELD_UNKNOWN'], ORDERS],
  // prototype pollution
  ['__proto__ at the top', splice('"__proto__": {"polluted": true}'), ['EVENT_FORBIDDEN_KEY'], ORDERS],
  ['constructor at the top', splice('"constructor": {"prototype": {"polluted": true}}'), ['EVENT_FORBIDDEN_KEY'], ORDERS],
  ['prototype at the top', splice('"prototype": 1'), ['EVENT_FORBIDDEN_KEY'], ORDERS],
  ['__proto__ in the payload', intoPayload('"__proto__": {"polluted": true}'), ['EVENT_FORBIDDEN_KEY'], ORDERS],
  ['own __proto__ in a parsed value', JSON.parse(splice('"__proto__": {"polluted": true}')), ['EVENT_FORBIDDEN_KEY'], ORDERS],
  // numbers
  ['version beyond 2^53', JSON.stringify(order()).replace('"version":1', '"version":9007199254740993'), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['total beyond 2^64', JSON.stringify(order()).replace(/"total_cents":\d+/, '"total_cents":18446744073709551616'), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['NUL in the producer', order({ producer: 'a\u0000b' }), ['RULE_PATTERN'], ORDERS],
  ['blank producer', order({ producer: '   ' }), ['RULE_PATTERN'], ORDERS],
  ['producer made of a bidi override', order({ producer: 'shop\u202ekcab' }), ['RULE_PATTERN'], ORDERS],
  ['zero-width space in a coupon code', payload({ coupon_code: 'SAVE\u200b10' }), ['RULE_PATTERN'], ORDERS],
  ['amount that is no integer but reads as one', JSON.stringify(order()).replace(/"total_cents":\d+/, '"total_cents":1999.9999999999999999'), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['version one past the largest long Avro carries (2^53 − 1)', JSON.stringify(order()).replace('"version":1', '"version":9007199254740991'), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['number overflowing a double', JSON.stringify(order()).replace(/"total_cents":\d+/, '"total_cents":1e400'), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['negative amount', payload({ total_cents: -1 }), ['RULE_RANGE'], ORDERS],
  ['amount over the maximum', payload({ total_cents: 1e13 + 1 }), ['RULE_RANGE'], ORDERS],
  ['fractional int', payload({ item_count: 2.5 }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['int beyond 32 bits', payload({ item_count: 2 ** 31 }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['amount as a string', payload({ total_cents: '100' }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['NaN in a parsed value', payload({ total_cents: NaN }), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['Infinity in a parsed value', payload({ total_cents: Infinity }), ['EVENT_NUMBER_UNSAFE'], ORDERS],
  ['boolean as number', payload({ item_count: true }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  // duplicate keys
  ['duplicate op', splice('"op": "delete"'), ['EVENT_DUPLICATE_KEY'], ORDERS],
  ['duplicate key in payload', intoPayload('"status": "cancelled"'), ['EVENT_DUPLICATE_KEY'], ORDERS],
  // nulls and missing fields
  ['null event_id', order({ event_id: null }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['null status', payload({ status: null }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['upsert without payload', order({ payload: null }), ['RULE_OP_PAYLOAD'], ORDERS],
  ['empty object', {}, ['EVENT_FIELD_MISSING', 'RULE_KEY_MISSING'], ORDERS],
  ['missing key field', (({ order_id: _k, ...rest }) => rest)(order()), ['RULE_KEY_MISSING'], ORDERS],
  ['empty key', order({ order_id: '' }), ['RULE_KEY_MISSING'], ORDERS],
  ['undefined-valued field in a parsed value', order({ producer: undefined }), ['EVENT_FIELD_MISSING'], ORDERS],
  // enums and strings
  ['unknown status', payload({ status: 'lost' }), ['RULE_ENUM'], ORDERS],
  ['status in the wrong case', payload({ status: 'PAID' }), ['RULE_ENUM'], ORDERS],
  ['unknown op', order({ op: 'merge' }), ['RULE_ENUM'], ORDERS],
  ['lower-case currency', payload({ currency: 'eur' }), ['RULE_PATTERN'], ORDERS],
  ['event_id with spaces and newline', order({ event_id: 'a b\n' }), ['RULE_PATTERN'], ORDERS],
  ['key separator inside a composite key field', sampleInventoryJson(1, NOW, { sku: 'a|b' }), ['RULE_PATTERN'], { contract: 'inventory', now: NOW }],
  ['object where a string belongs', order({ producer: { name: 'x' } }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  // timestamps
  ['timestamp without T and zone', order({ event_time: '2026-06-01 12:00:00' }), ['RULE_TIMESTAMP_FORMAT'], ORDERS],
  ['timestamp without zone', order({ event_time: '2026-06-01T12:00:00' }), ['RULE_TIMESTAMP_FORMAT'], ORDERS],
  ['February 30th', order({ event_time: '2026-02-30T12:00:00Z' }), ['RULE_TIMESTAMP_FORMAT'], ORDERS],
  ['leap second', order({ event_time: '2026-06-01T11:59:60Z' }), ['RULE_TIMESTAMP_FORMAT'], ORDERS],
  ['expanded year', order({ event_time: '+275760-09-13T00:00:00Z' }), ['RULE_TIMESTAMP_FORMAT'], ORDERS],
  ['epoch number in JSON', order({ event_time: NOW }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['an hour in the future', order({ event_time: new Date(NOW + HOUR).toISOString() }), ['RULE_TIMESTAMP_FUTURE'], ORDERS],
  ['thirty days old', order({ event_time: new Date(NOW - 30 * 24 * HOUR).toISOString() }), ['RULE_TIMESTAMP_EXPIRED'], ORDERS],
  // contracts and versions
  ['unknown contract', order(), ['CONTRACT_UNKNOWN'], { contract: 'users', now: NOW }],
  ['contract named __proto__', order(), ['CONTRACT_UNKNOWN'], { contract: '__proto__', now: NOW }],
  ['no contract at all', order(), ['CONTRACT_MISSING'], { now: NOW }],
  ['contract field of the wrong type', order({ contract: 7 }), ['EVENT_SCHEMA_MISMATCH'], { now: NOW }],
  ['unknown schema version', order({ schema_version: 99 }), ['SCHEMA_VERSION_UNKNOWN'], ORDERS],
  ['schema version as a string', order({ schema_version: '2' }), ['EVENT_SCHEMA_MISMATCH'], ORDERS],
  ['delete on an append-only contract', sampleClickJson(1, NOW, { op: 'delete', payload: null }), ['RULE_OP_NOT_ALLOWED'], { contract: 'clickstream', now: NOW }],
  ['reserved above on hand', sampleInventoryJson(1, NOW, { payload: { on_hand: 1, reserved: 5 } }), ['RULE_CROSS_FIELD'], { contract: 'inventory', now: NOW }],
  ['unknown field', order({ discount: 5 }), ['EVENT_FIELD_UNKNOWN'], ORDERS],
];

describe('decodeEvent on hostile input', () => {
  it('has at least 50 hostile cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(50);
  });

  it.each(cases)('%s', (_name, input, expected, options = { now: NOW }) => {
    const result = decodeEvent(input, options);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const codes = result.issues.map((i) => i.code);
    for (const code of expected) expect(codes).toContain(code);
    for (const i of result.issues) {
      expect(REASON_CODES).toContain(i.code);
      expect(i.path).toMatch(JSON_POINTER); // '' (the whole event) or /a/b/0, escaped as RFC 6901 says
      expect(i.message.length).toBeGreaterThan(0);
      expect(i.message.length).toBeLessThan(400); // huge inputs are clipped in messages
    }
  });

  it('never pollutes Object.prototype', () => {
    decodeEvent(splice('"__proto__": {"polluted": true}'), ORDERS);
    decodeEvent(intoPayload('"constructor": {"prototype": {"polluted": true}}'), ORDERS);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reports every issue of a many-sided bad event, each at its path', () => {
    const bad = order({ event_id: '', producer: 7, op: 'merge', extra: 1, payload: { customer_id: 'c', status: 'lost', total_cents: -5, currency: 'eur', item_count: 1, coupon_code: null } });
    const result = decodeEvent(bad, ORDERS);
    expect(!result.ok && result.issues.map((i) => `${i.code} ${i.path}`).sort()).toEqual(
      [
        'RULE_LENGTH /event_id',
        'EVENT_SCHEMA_MISMATCH /producer',
        'RULE_ENUM /op',
        'RULE_ENUM /payload/status',
        'RULE_RANGE /payload/total_cents',
        'RULE_PATTERN /payload/currency',
        'EVENT_FIELD_UNKNOWN /extra',
      ].sort(),
    );
  });

  it('caps the issue list of an event with thousands of unknown fields', () => {
    const junk = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`f${i}`, i]));
    const result = decodeEvent({ ...order(), ...junk }, ORDERS);
    expect(!result.ok && result.issues.length).toBe(MAX_ISSUES);
  });

  it('reports a truncated Avro body as AVRO_DECODE_FAILED', () => {
    const valid = decodeEvent(order(), ORDERS);
    if (!valid.ok) throw new Error('fixture invalid');
    const framed = encodeSingleObject(orders.latest.schema, valid.event);
    const result = decodeEvent(framed.subarray(0, framed.length - 5), { now: NOW });
    expect(!result.ok && result.issues.map((i) => i.code)).toEqual(['AVRO_DECODE_FAILED']);
  });

  it('refuses an Avro string that is not valid UTF-8 (avsc would turn it into U+FFFD), and keeps a real U+FFFD', () => {
    const valid = decodeEvent(order({ producer: 'ABCD' }), ORDERS);
    if (!valid.ok) throw new Error('fixture invalid');
    const framed = Buffer.from(encodeSingleObject(orders.latest.schema, valid.event));
    const at = framed.indexOf('ABCD');
    expect(at).toBeGreaterThan(0);
    const bad = Buffer.from(framed);
    bad.set([0xff, 0xfe], at); // the producer's first two bytes: never valid UTF-8
    const result = decodeEvent(bad, { now: NOW });
    expect(!result.ok && result.issues.map((i) => i.code)).toEqual(['EVENT_NOT_UTF8']);
    // A producer name that really holds U+FFFD (EF BF BD) is data, not damage.
    const genuine = decodeEvent(order({ producer: 'A\ufffdB' }), ORDERS);
    if (!genuine.ok) throw new Error('fixture invalid');
    const real = decodeEvent(encodeSingleObject(orders.latest.schema, genuine.event), { now: NOW });
    expect(real.ok && (real.event as { producer: string }).producer).toBe('A\ufffdB');
  });

  it('judges Avro strings by their bytes, not by whether they encode back the same (a legal but longer length prefix)', () => {
    // Avro lengths are zig-zag varints; 0x8A 0x00 reads as 5 like 0x0A does, but re-encodes shorter.
    const longPrefix = (producer: string, bytes: number[]) => {
      const valid = decodeEvent(order({ producer }), ORDERS);
      if (!valid.ok) throw new Error('fixture invalid');
      const framed = Buffer.from(encodeSingleObject(orders.latest.schema, valid.event));
      const at = framed.indexOf(Buffer.from([0x0a, ...Buffer.from(producer)]));
      expect(at).toBeGreaterThan(0);
      return Buffer.concat([framed.subarray(0, at), Buffer.from([0x8a, 0x00]), Buffer.from(bytes), framed.subarray(at + 1 + Buffer.byteLength(producer))]);
    };
    const genuine = decodeEvent(longPrefix('A\ufffdB', [0x41, 0xef, 0xbf, 0xbd, 0x42]), { now: NOW });
    expect(genuine.ok && (genuine.event as { producer: string }).producer).toBe('A\ufffdB');
    const damaged = decodeEvent(longPrefix('A\ufffdB', [0x41, 0xff, 0xfe, 0xbd, 0x42]), { now: NOW });
    expect(!damaged.ok && damaged.issues.map((i) => i.code)).toEqual(['EVENT_NOT_UTF8']);
  });

  it('accepts a UTF-8 byte-order mark before the JSON', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8(JSON.stringify(order()))]);
    expect(decodeEvent(bytes, ORDERS).ok).toBe(true);
  });

  it('never throws on arbitrary text, bytes or JSON values (property test)', () => {
    const check = (input: unknown, options: DecodeOptions) => {
      const result = decodeEvent(input, options);
      if (!result.ok) for (const i of result.issues) expect(REASON_CODES).toContain(i.code);
    };
    fc.assert(fc.property(fc.string({ maxLength: 200 }), (s) => check(s, ORDERS)), { numRuns: 400 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (b) => check(b, ORDERS)), { numRuns: 400 });
    fc.assert(fc.property(fc.anything(), (v) => check(v, ORDERS)), { numRuns: 400 });
  });

  it('never throws when any field of a valid event is replaced by any JSON value (property test)', () => {
    const base = order();
    const fields = [...Object.keys(base), ...Object.keys(base.payload as object).map((k) => `payload.${k}`)];
    fc.assert(
      fc.property(fc.constantFrom(...fields), fc.jsonValue(), (field, value) => {
        const event = JSON.parse(JSON.stringify(base)) as Record<string, Record<string, unknown>>;
        const [top, inner] = field.split('.');
        if (inner === undefined) (event as Record<string, unknown>)[top] = value;
        else event[top][inner] = value;
        const text = JSON.stringify(event);
        const result = decodeEvent(utf8(text), ORDERS);
        if (!result.ok) for (const i of result.issues) expect(REASON_CODES).toContain(i.code);
      }),
      { numRuns: 500 },
    );
  });
});
