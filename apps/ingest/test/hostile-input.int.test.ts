import { Readable } from 'node:stream';
import { encodeSingleObject, HEADERS, REASON_CODES, CONTRACTS, parseIsoMillis } from '@sluice/contracts';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, click, createTopics, inventory, order, randomName, readTopic, testBrokers, startIngest } from './support';

const brokers = testBrokers();
const rawTopic = randomName('raw');
let ingest: IngestRuntime;
/** Every event the tests saw accepted, by event_id → the exact bytes sent. */
const acceptedBytes = new Map<string, string>();
/** The accepted events whose request named the contract in the `sluice-contract` HTTP header. */
const namedByHttpHeader = new Set<string>();

const auth = (key = KEYS.all.key) => ({ authorization: `Bearer ${key}` });
const json = { 'content-type': 'application/json' };
const ndjson = { 'content-type': 'application/x-ndjson' };

let baseUrl = '';

async function request(method: string, path: string, headers: Record<string, string>, payload?: string | Buffer | Readable) {
  const res = await fetch(baseUrl + path, {
    method,
    headers,
    body: payload instanceof Readable ? (Readable.toWeb(payload) as ReadableStream) : payload,
    ...(payload instanceof Readable ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: Object.fromEntries(res.headers) };
}

// Real sockets: fastify's inject() cannot load under Jest's CommonJS runtime (light-my-request → ESM cookie).
async function post(payload: string | Buffer | Readable, headers: Record<string, string> = { ...auth(), ...json }) {
  return request('POST', '/v1/events', headers, payload);
}

/** Posts one event and expects it rejected with `code` (422 for a single event). */
async function expectRejected(event: unknown, code: string, extraHeaders: Record<string, string> = {}) {
  const body = typeof event === 'string' || Buffer.isBuffer(event) ? event : JSON.stringify(event);
  const res = await post(body, { ...auth(), ...json, ...extraHeaders });
  expect({ status: res.status, code: res.body.error?.code, eventCode: res.body.errors?.[0]?.code }).toEqual({
    status: 422,
    code: 'INGEST_ALL_REJECTED',
    eventCode: code,
  });
  expect(REASON_CODES).toContain(code);
  expect(res.body.errors[0].index).toBe(0);
  return res;
}

beforeAll(async () => {
  await createTopics(brokers, [rawTopic]);
  ({ ingest, url: baseUrl } = await startIngest(brokers, rawTopic));
});

afterAll(async () => {
  await ingest?.close();
});

describe('authentication', () => {
  it.each([
    ['no header', {}],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['unknown key', { authorization: 'Bearer k-wrong-0123456789abcdefghijklmnop' }],
    ['prefix of a valid key', { authorization: `Bearer ${KEYS.all.key.slice(0, -1)}` }],
    ['valid key plus a suffix', { authorization: `Bearer ${KEYS.all.key}x` }],
    ['key with inner space', { authorization: `Bearer ${KEYS.all.key} x` }],
    ['600-char key', { authorization: `Bearer ${'a'.repeat(600)}` }],
    ['a tab inside the key', { authorization: `Bearer k-all\txyz0123456789abcdefghijklmnop` }],
    ['non-ASCII key', { authorization: 'Bearer k-all-\u00e9-0123456789abcdefghijklmnop' }],
  ])('401 for %s, before the body is read', async (_name, headers) => {
    const res = await post(JSON.stringify(order()), { ...json, ...(headers as Record<string, string>) });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INGEST_UNAUTHENTICATED');
    expect(typeof res.body.error.details.reason).toBe('string');
    expect(res.headers['www-authenticate']).toContain('Bearer');
  });

  it('accepts the scheme case-insensitively', async () => {
    const e = order();
    const res = await post(JSON.stringify(e), { authorization: `bearer ${KEYS.all.key}`, ...json });
    expect(res.status).toBe(200);
    acceptedBytes.set(e.event_id as string, JSON.stringify(e));
  });

  it('403 when every event names a contract outside the key scope', async () => {
    const res = await post(JSON.stringify([inventory(), click()]), { ...auth(KEYS.orders.key), ...json });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('INGEST_FORBIDDEN');
    expect(res.body.errors.map((e: { code: string }) => e.code)).toEqual(['CONTRACT_FORBIDDEN', 'CONTRACT_FORBIDDEN']);
  });

  // Bronze keeps the envelope's producer: a key may not file events under another system's name.
  it('207 when a key sends one event under a producer name it may not use', async () => {
    const ok = order();
    const res = await post(JSON.stringify([ok, order({ producer: 'wms' })]), { ...auth(KEYS.orders.key), ...json });
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ accepted: 1, rejected: 1, errors: [{ index: 1, code: 'PRODUCER_MISMATCH' }] });
    expect(res.body.errors[0].message).toBe('the event\'s producer "wms" is not one the API key may send as; it sends as "orders-only"');
    acceptedBytes.set(ok.event_id as string, JSON.stringify(ok));
  });

  it('403 when every event names a producer the key may not send as', async () => {
    const res = await post([order({ producer: 'all-producer' }), order({ producer: 'Shop' })].map((e) => JSON.stringify(e)).join('\n'), { ...auth(KEYS.orders.key), ...ndjson });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('INGEST_FORBIDDEN');
    expect(res.body.errors.map((e: { code: string; line: number }) => [e.code, e.line])).toEqual([['PRODUCER_MISMATCH', 1], ['PRODUCER_MISMATCH', 2]]);
  });

  it('207 when a scoped key mixes allowed and forbidden contracts, and does not leak schema details', async () => {
    const ok = order();
    const res = await post(JSON.stringify([ok, inventory({ payload: { on_hand: -5, reserved: 0 } })]), { ...auth(KEYS.orders.key), ...json });
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ accepted: 1, rejected: 1, errors: [{ index: 1, code: 'CONTRACT_FORBIDDEN' }] });
    expect(res.body.errors[0].issues).toBeUndefined();
    acceptedBytes.set(ok.event_id as string, JSON.stringify(ok));
  });
});

describe('request framing', () => {
  it.each([
    ['empty body', ''],
    ['unclosed array', '['],
    ['empty array', '[]'],
    ['trailing comma', `[${JSON.stringify(order())},]`],
    ['double comma', `[${JSON.stringify(order())},,${JSON.stringify(order())}]`],
    ['text after the array', `[${JSON.stringify(order())}] trailing`],
    ['unterminated string in array', '[{"a":"b}'],
    ['closing brace for the array', '[{"a":1}}'],
  ])('400 INGEST_BODY_INVALID for %s', async (_name, body) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INGEST_BODY_INVALID');
  });

  it('400 for an NDJSON body of blank lines', async () => {
    const res = await post('\n\r\n  \n', { ...auth(), ...ndjson });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INGEST_BODY_INVALID');
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain' }],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['xml', { 'content-type': 'application/xml' }],
  ])('415 for %s', async (_name, headers) => {
    const res = await post(JSON.stringify(order()), { ...auth(), ...headers });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('INGEST_UNSUPPORTED_MEDIA_TYPE');
    expect(res.body.error.details.supported).toContain('application/x-ndjson');
  });

  it('413 with the limit for a body larger than the limit (declared length)', async () => {
    const res = await post('x'.repeat(256 * 1024 + 1));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'INGEST_BODY_TOO_LARGE', details: { limitBytes: 256 * 1024 } });
  });

  it('413 for a chunked body that grows past the limit', async () => {
    const chunks = Array.from({ length: 40 }, () => Buffer.alloc(8 * 1024, 0x20));
    const res = await post(Readable.from(chunks), { ...auth(), ...json });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('INGEST_BODY_TOO_LARGE');
  });

  it('413 with the limit for too many events (JSON array and NDJSON)', async () => {
    const events = Array.from({ length: 101 }, () => JSON.stringify({ a: 1 }));
    const a = await post(`[${events.join(',')}]`);
    expect(a.status).toBe(413);
    expect(a.body.error).toMatchObject({ code: 'INGEST_BATCH_TOO_LARGE', details: { limitEvents: 100, events: 101 } });
    const b = await post(events.join('\n'), { ...auth(), ...ndjson });
    expect(b.status).toBe(413);
    expect(b.body.error.code).toBe('INGEST_BATCH_TOO_LARGE');
  });

  it('404 for other routes and methods', async () => {
    const a = await request('GET', '/v1/events', auth());
    const b = await request('POST', '/v1/other', { ...auth(), ...json }, '{}');
    expect([a.status, b.status]).toEqual([404, 404]);
    expect(b.body.error.code).toBe('INGEST_NOT_FOUND');
  });
});

describe('hostile events are rejected one by one with a reason code', () => {
  it.each([
    ['broken JSON', '{"contract":"orders",', 'EVENT_NOT_JSON'],
    ['NaN literal', '{"contract":"orders","version":NaN}', 'EVENT_NOT_JSON'],
    ['single quotes', "{'contract':'orders'}", 'EVENT_NOT_JSON'],
    ['a number', '42', 'EVENT_NOT_OBJECT'],
    ['null', 'null', 'EVENT_NOT_OBJECT'],
    ['a string', '"orders"', 'EVENT_NOT_OBJECT'],
    ['deep array nesting', '['.repeat(5000) + ']'.repeat(5000), 'EVENT_TOO_DEEP'],
  ])('%s', async (_name, body, code) => {
    await expectRejected(body, code);
  });

  it('deep nesting inside an event', async () => {
    let nested: unknown = 1;
    for (let i = 0; i < 40; i++) nested = { n: nested };
    await expectRejected(order({}, { extra: nested }), 'EVENT_TOO_DEEP');
  });

  it('__proto__ key at the top level', async () => {
    await expectRejected(JSON.stringify(order()).replace('{', '{"__proto__":{"polluted":true},'), 'EVENT_FORBIDDEN_KEY');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('__proto__ key inside the payload', async () => {
    await expectRejected(JSON.stringify(order()).replace('"payload":{', '"payload":{"__proto__":{"admin":true},'), 'EVENT_FORBIDDEN_KEY');
  });

  it('constructor.prototype key', async () => {
    await expectRejected(JSON.stringify(order()).replace('{', '{"constructor":{"prototype":{"x":1}},'), 'EVENT_FORBIDDEN_KEY');
  });

  it('duplicate keys (last-one-wins smuggling)', async () => {
    await expectRejected(JSON.stringify(order()).replace('"version":1', '"version":1,"version":999'), 'EVENT_DUPLICATE_KEY');
  });

  it('integer beyond 2^53', async () => {
    await expectRejected(JSON.stringify(order()).replace('"version":1', '"version":18446744073709551616'), 'EVENT_NUMBER_UNSAFE');
  });

  it('invalid UTF-8 bytes', async () => {
    const bytes = Buffer.concat([Buffer.from(JSON.stringify(order()).slice(0, -1) + ',"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    await expectRejected(bytes, 'EVENT_NOT_UTF8');
  });

  it('an event over the per-event limit', async () => {
    await expectRejected(order({}, { customer_id: 'c'.repeat(17 * 1024) }), 'EVENT_TOO_LARGE');
  });

  it('no contract named', async () => {
    const e = order();
    delete e.contract;
    await expectRejected(e, 'CONTRACT_MISSING');
  });

  it('unknown contract', async () => {
    await expectRejected(order({ contract: 'payments' }), 'CONTRACT_UNKNOWN');
  });

  it('inherited property names are not contracts', async () => {
    await expectRejected(order({ contract: 'toString' }), 'CONTRACT_UNKNOWN');
    await expectRejected(order({ contract: '__proto__' }), 'CONTRACT_UNKNOWN');
  });

  it('contract field of the wrong type', async () => {
    await expectRejected(order({ contract: ['orders'] }), 'EVENT_SCHEMA_MISMATCH');
  });

  it('header and body disagree on the contract', async () => {
    await expectRejected(order(), 'CONTRACT_MISMATCH', { 'sluice-contract': 'inventory' });
  });

  it('missing envelope entirely', async () => {
    const res = await expectRejected({ contract: 'orders', payload: order().payload }, 'EVENT_FIELD_MISSING');
    const paths = res.body.errors[0].issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['/event_id', '/event_time', '/producer', '/version', '/op', '/order_id']));
  });

  it('missing event_id', async () => {
    const e = order();
    delete e.event_id;
    await expectRejected(e, 'EVENT_FIELD_MISSING');
  });

  it('wrong type: version as a string', async () => {
    await expectRejected(order({ version: '1' }), 'EVENT_SCHEMA_MISMATCH');
  });

  it('wrong type: payload as an array', async () => {
    await expectRejected(order({ payload: [1, 2] }), 'EVENT_SCHEMA_MISMATCH');
  });

  it('unknown schema version', async () => {
    await expectRejected(order({ schema_version: 99 }), 'SCHEMA_VERSION_UNKNOWN');
  });

  it('field the schema does not declare', async () => {
    await expectRejected(order({ is_admin: true }), 'EVENT_FIELD_UNKNOWN');
  });

  it('negative amount', async () => {
    await expectRejected(order({}, { total_cents: -1 }), 'RULE_RANGE');
  });

  it('status outside the enum', async () => {
    const res = await post(JSON.stringify(order({}, { status: 'stolen' })));
    expect(res.status).toBe(422);
    expect(['RULE_ENUM', 'EVENT_SCHEMA_MISMATCH']).toContain(res.body.errors[0].code);
  });

  it('event_time in the far future', async () => {
    await expectRejected(order({ event_time: '2999-01-01T00:00:00Z' }), 'RULE_TIMESTAMP_FUTURE');
  });

  it('event_time that is not a timestamp', async () => {
    await expectRejected(order({ event_time: 'yesterday' }), 'RULE_TIMESTAMP_FORMAT');
  });

  it('event_time without a zone', async () => {
    await expectRejected(order({ event_time: '2026-11-29T10:00:00' }), 'RULE_TIMESTAMP_FORMAT');
  });

  it('empty entity key', async () => {
    await expectRejected(order({ order_id: '' }), 'RULE_KEY_MISSING');
  });

  it('delete carrying a payload', async () => {
    await expectRejected(order({ op: 'delete' }), 'RULE_OP_PAYLOAD');
  });

  it('delete on an append-only contract', async () => {
    await expectRejected(click({ op: 'delete', payload: null }), 'RULE_OP_NOT_ALLOWED');
  });

  it('lowercase currency', async () => {
    await expectRejected(order({}, { currency: 'eur' }), 'RULE_PATTERN');
  });

  it('reports every issue of an event with paths', async () => {
    const res = await expectRejected(order({}, { total_cents: -1, currency: 'eur' }), 'RULE_RANGE');
    expect(res.body.errors[0].issues.map((i: { path: string }) => i.path)).toEqual(['/payload/total_cents', '/payload/currency']);
  });

  it('Avro body with unknown framing', async () => {
    const res = await post(Buffer.from([0x07, 0x01, 0x02]), { ...auth(), 'content-type': 'application/vnd.apache.avro' });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].code).toBe('AVRO_FRAMING_UNKNOWN');
  });

  // Avro under a JSON type was decoded anyway: accepted without its registry lookup or the
  // contract header a Confluent-framed record needs, and cut at newline bytes inside NDJSON.
  it('Avro single-object bytes sent as application/json', async () => {
    const e = order();
    const bytes = encodeSingleObject(CONTRACTS.orders.latest.schema, { ...e, contract: undefined, event_time: parseIsoMillis(e.event_time as string) });
    const res = await post(bytes, { ...auth(), 'content-type': 'application/json' });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].code).toBe('EVENT_NOT_JSON');
    expect(res.body.errors[0].message).toMatch(/Avro Content-Type/);
  });

  // Content codings were ignored: a gzip body was judged as broken JSON (one event rejected for
  // a whole batch), a `br` label on plain JSON was accepted.
  it('a body with a content coding', async () => {
    for (const coding of ['gzip', 'br', 'deflate, gzip']) {
      const res = await post(JSON.stringify(order()), { ...auth(), 'content-type': 'application/json', 'content-encoding': coding });
      expect(res.status).toBe(415);
      expect(res.body.error.code).toBe('INGEST_UNSUPPORTED_MEDIA_TYPE');
      expect(res.body.error.details.reason).toMatch(/Content-Encoding/);
    }
    const plain = order();
    expect((await post(JSON.stringify(plain), { ...auth(), 'content-type': 'application/json', 'content-encoding': 'identity' })).status).toBe(200);
    acceptedBytes.set(plain.event_id as string, JSON.stringify(plain));
  });

  it('a body starting with a UTF-8 byte-order mark', async () => {
    for (const payload of [JSON.stringify(order()), JSON.stringify([order(), order()])]) {
      const res = await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(payload)]), { ...auth(), ...json });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INGEST_BODY_INVALID');
      expect(res.body.error.details.reason).toMatch(/byte-order mark/);
    }
  });

  // The mark was looked for at byte 0 only: behind whitespace, a batch was taken for one event
  // and refused as not an object, under-counting the batch.
  it('a byte-order mark behind leading whitespace', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const behind = await post(Buffer.concat([Buffer.from('\n '), bom, Buffer.from(JSON.stringify([order(), order()]))]), { ...auth(), ...json });
    expect({ status: behind.status, code: behind.body.error?.code }).toEqual({ status: 400, code: 'INGEST_BODY_INVALID' });
    expect(behind.body.error.details.reason).toMatch(/byte-order mark/);
  });

  // Bracket depth was counted without matching kinds: in `[{"note":[1}, A], B, C]` the comma
  // before A was hidden inside element 0, B answered at index 1 for A's place, A never sent.
  it('an array whose brackets do not match', async () => {
    const res = await post(`[{"note":[1}, ${JSON.stringify(order())}], ${JSON.stringify(order())}, ${JSON.stringify(order({}, { total_cents: -5 }))}]`, { ...auth(), ...json });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'INGEST_BODY_INVALID' });
    expect(res.body.error.details.reason).toMatch(/mismatched bracket at byte 11/);
  });

  // 0x00 and 0xC3 start Avro framings: such JSON-typed events were answered with Avro's reason.
  it('a JSON event starting with a NUL byte or with é', async () => {
    const e = order();
    const res = await post(Buffer.concat([Buffer.from([0x00]), Buffer.from(`\n${JSON.stringify(e)}`)]), { ...auth(), ...ndjson });
    expect({ status: res.status, errors: res.body.errors.map((x: { index: number; code: string }) => [x.index, x.code]) }).toEqual({ status: 207, errors: [[0, 'EVENT_NOT_JSON']] });
    acceptedBytes.set(e.event_id as string, JSON.stringify(e));
    await expectRejected('\u00e9{"a":1}', 'EVENT_NOT_JSON');
  });

  it('a charset other than UTF-8', async () => {
    const res = await post(JSON.stringify(order()), { ...auth(), 'content-type': 'application/json; charset=utf-16le' });
    expect(res.status).toBe(415);
    expect(res.body.error.details.reason).toMatch(/charset/);
    // UTF-8 and US-ASCII labels are JSON's own encoding (RFC 8259 §8.1): accepted.
    for (const charset of ['UTF-8', 'us-ascii']) {
      const e = order();
      expect((await post(JSON.stringify(e), { ...auth(), 'content-type': `application/json; charset=${charset}` })).status).toBe(200);
      acceptedBytes.set(e.event_id as string, JSON.stringify(e));
    }
  });

  it('Avro single-object body with a truncated payload', async () => {
    const e = order();
    const bytes = encodeSingleObject(CONTRACTS.orders.latest.schema, { ...e, contract: undefined, event_time: parseIsoMillis(e.event_time as string) });
    const res = await post(bytes.subarray(0, bytes.length - 4), { ...auth(), 'content-type': 'application/vnd.apache.avro' });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].code).toBe('AVRO_DECODE_FAILED');
  });
});

describe('mixed batches', () => {
  it('NDJSON: accepts the valid lines and reports the rest by index and line', async () => {
    const good = [order(), inventory(), click()];
    const lines = [JSON.stringify(good[0]), '{broken', '', JSON.stringify(good[1]), JSON.stringify(order({}, { total_cents: -5 })), JSON.stringify(good[2])];
    const res = await post(lines.join('\n'), { ...auth(), ...ndjson });
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({
      accepted: 3,
      rejected: 2,
      errors: [
        { index: 1, line: 2, code: 'EVENT_NOT_JSON' },
        { index: 3, line: 5, code: 'RULE_RANGE' },
      ],
    });
    for (const g of good) acceptedBytes.set(g.event_id as string, JSON.stringify(g));
  });

  it('JSON array: keeps each accepted element byte for byte', async () => {
    const a = order();
    const b = inventory();
    const spaced = `[ ${JSON.stringify(a, null, 2)} , 17, ${JSON.stringify(b)} ]`;
    const res = await post(spaced);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ accepted: 2, rejected: 1, errors: [{ index: 1, code: 'EVENT_NOT_OBJECT' }] });
    acceptedBytes.set(a.event_id as string, JSON.stringify(a, null, 2));
    acceptedBytes.set(b.event_id as string, JSON.stringify(b));
  });

  it('the contract header names the contract for events without the field', async () => {
    const e = order();
    delete e.contract;
    const res = await post(JSON.stringify(e), { ...auth(), ...json, 'sluice-contract': 'orders' });
    expect(res.status).toBe(200);
    acceptedBytes.set(e.event_id as string, JSON.stringify(e));
    namedByHttpHeader.add(e.event_id as string);
  });

  it('accepts a valid Avro single-object event', async () => {
    const e = order();
    const value = { ...e, event_time: parseIsoMillis(e.event_time as string) };
    delete (value as Record<string, unknown>).contract;
    const bytes = encodeSingleObject(CONTRACTS.orders.latest.schema, value);
    const res = await post(bytes, { ...auth(), 'content-type': 'application/vnd.apache.avro' });
    expect(res.status).toBe(200);
    acceptedBytes.set(e.event_id as string, bytes.toString('latin1'));
  });
});

describe('what reaches the raw topic', () => {
  it('exactly the accepted events, keyed by entity key, bytes untouched, with the producer, a contract header only where the body names none, and the time as the record timestamp', async () => {
    const records = await readTopic(brokers, rawTopic, acceptedBytes.size);
    expect(records.length).toBe(acceptedBytes.size);
    const seen = new Map<string, string>();
    for (const r of records) {
      const value = r.value as Buffer;
      const isAvro = value[0] === 0xc3;
      const text = isAvro ? value.toString('latin1') : value.toString('utf8');
      const eventId = isAvro ? [...acceptedBytes].find(([, v]) => v === text)?.[0] : JSON.parse(text).event_id;
      expect(eventId).toBeDefined();
      seen.set(eventId as string, text);
      expect(r.headers[HEADERS.producer]?.toString()).toMatch(/^(all-producer|orders-only)$/);
      expect(r.timestamp).toBeGreaterThan(Date.now() - 600_000);
      expect(r.timestamp).toBeLessThanOrEqual(Date.now());
      expect(r.headers['sluice-received-at']).toBeUndefined();
      expect(r.headers[HEADERS.contract]?.toString()).toBe(namedByHttpHeader.has(eventId as string) ? 'orders' : undefined);
      if (!isAvro) {
        const parsed = JSON.parse(text);
        const expectedKey = parsed.order_id ?? parsed.user_id ?? `${parsed.sku}|${parsed.warehouse_id}`;
        expect(r.key?.toString()).toBe(expectedKey);
      }
    }
    expect(seen).toEqual(acceptedBytes);
  });

  it('health and readiness', async () => {
    expect((await request('GET', '/healthz', {})).status).toBe(200);
    expect((await request('GET', '/readyz', {})).status).toBe(200);
  });
});

describe('the record timestamp', () => {
  it('is when ingest accepted the event, not its event_time', async () => {
    // event_time two hours back (inside the age rule): a record stamped with it, or with anything
    // but the time of acceptance, would show here.
    const e = order({ event_time: new Date(Date.now() - 2 * 3_600_000).toISOString() });
    const before = Date.now();
    const res = await post(JSON.stringify(e), { ...auth(), ...json });
    const after = Date.now();
    expect(res.status).toBe(200);
    const records = await readTopic(brokers, rawTopic, acceptedBytes.size + 1);
    const mine = records.filter((r) => r.value?.toString('utf8').includes(e.event_id as string));
    expect(mine).toHaveLength(1);
    expect(mine[0].timestamp).toBeGreaterThanOrEqual(before);
    expect(mine[0].timestamp).toBeLessThanOrEqual(after);
  });
});
