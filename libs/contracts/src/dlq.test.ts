import { HEADERS } from './topics';
import { deadLetterHeaders, deadLetterRecord, dlqDetail, MAX_DLQ_DETAIL_BYTES, MAX_DLQ_RECORD_BYTES, type DeadLetterRecord } from './dlq';

describe('deadLetterHeaders', () => {
  it('keeps the original headers and adds the sluice-dlq-* headers', () => {
    const headers = deadLetterHeaders(
      { [HEADERS.producer]: Buffer.from('shop'), traceparent: Buffer.from('00-x') },
      { reason: 'RULE_RANGE', issues: [{ code: 'RULE_RANGE', path: '/a', message: 'too big' }], source: { topic: 'raw', partition: 2, offset: 41 }, contract: 'orders', now: Date.UTC(2026, 10, 29) },
    );
    expect(headers).toEqual({
      [HEADERS.producer]: Buffer.from('shop'),
      traceparent: Buffer.from('00-x'),
      [HEADERS.dlqReason]: 'RULE_RANGE',
      [HEADERS.dlqDetail]: JSON.stringify([{ code: 'RULE_RANGE', path: '/a', message: 'too big' }]),
      [HEADERS.dlqSourceTopic]: 'raw',
      [HEADERS.dlqSourcePartition]: '2',
      [HEADERS.dlqSourceOffset]: '41',
      [HEADERS.dlqProducer]: 'shop',
      [HEADERS.dlqTime]: '2026-11-29T00:00:00.000Z',
      [HEADERS.dlqContract]: 'orders',
    });
  });

  it('names the producer unknown and leaves the contract out when they are not known', () => {
    const headers = deadLetterHeaders({}, { reason: 'EVENT_NOT_JSON', issues: [], source: { topic: 'raw', partition: 0, offset: 0 }, now: 0 });
    expect(headers[HEADERS.dlqProducer]).toBe('unknown');
    expect(HEADERS.dlqContract in headers).toBe(false);
  });

  it("drops an original header in the DLQ's namespace: a direct producer cannot forge the truncation mark or the contract", () => {
    const forged = {
      [HEADERS.dlqTruncated]: Buffer.from('{}'),
      [HEADERS.dlqContract]: Buffer.from('inventory'),
      'sluice-dlq-anything': Buffer.from('x'),
      [HEADERS.producer]: Buffer.from('direct'),
    };
    const headers = deadLetterHeaders(forged, { reason: 'EVENT_NOT_JSON', issues: [], source: { topic: 'raw', partition: 0, offset: 3 }, now: 0 });
    expect(HEADERS.dlqTruncated in headers).toBe(false);
    expect(HEADERS.dlqContract in headers).toBe(false);
    expect('sluice-dlq-anything' in headers).toBe(false);
    expect(headers[HEADERS.producer]).toEqual(Buffer.from('direct'));
    expect(headers[HEADERS.dlqSourceOffset]).toBe('3');
  });
});

describe('dlqDetail', () => {
  it('keeps whole issues under the cap and says how many were cut', () => {
    const issues = Array.from({ length: 500 }, (_, i) => ({ code: 'RULE_RANGE', path: `/a/${i}`, message: 'x'.repeat(100) }));
    const detail = dlqDetail(issues);
    expect(Buffer.byteLength(detail)).toBeLessThanOrEqual(MAX_DLQ_DETAIL_BYTES);
    const parsed = JSON.parse(detail);
    expect(parsed[parsed.length - 1].code).toBe('TRUNCATED');
    expect(parsed[0]).toEqual(issues[0]);
  });

  it('cuts a single huge issue', () => {
    const detail = dlqDetail([{ code: 'X', path: '/'.repeat(50_000), message: 'm'.repeat(50_000) }]);
    expect(Buffer.byteLength(detail)).toBeLessThanOrEqual(MAX_DLQ_DETAIL_BYTES);
  });
});

describe('deadLetterRecord', () => {
  const facts = { reason: 'EVENT_TOO_LARGE', issues: [{ code: 'EVENT_TOO_LARGE', path: '', message: 'too big' }], source: { topic: 'raw', partition: 1, offset: 7 }, now: 0 };
  // As Kafka counts it, with up to 10 bytes of framing per header.
  const size = (r: DeadLetterRecord) =>
    (r.key?.length ?? 0) + (r.value?.length ?? 0) + Object.entries(r.headers).reduce((n, [k, v]) => n + [v].flat().reduce((m: number, one) => m + 10 + Buffer.byteLength(k) + Buffer.byteLength(one), 0), 0);

  it('keeps a record that fits as it is, with the DLQ headers and no truncation mark', () => {
    const r = deadLetterRecord({ key: Buffer.from('k'), value: Buffer.from('{"a":1}'), headers: { traceparent: Buffer.from('00-x') } }, facts);
    expect(r.key).toEqual(Buffer.from('k'));
    expect(r.value).toEqual(Buffer.from('{"a":1}'));
    expect(r.headers.traceparent).toEqual(Buffer.from('00-x'));
    expect(HEADERS.dlqTruncated in r.headers).toBe(false);
  });

  // A raw record just under the broker's 1,048,588-byte limit, plus the DLQ headers, used to be
  // produced whole: the produce failed for good and validate retried the batch forever.
  it('cuts the value of a record near the broker limit to fit, saying the original size', () => {
    const value = Buffer.alloc(1_040_000, 0x61);
    const r = deadLetterRecord({ key: Buffer.from('order-1'), value, headers: { [HEADERS.producer]: Buffer.from('shop') } }, facts);
    expect(size(r)).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
    expect(size(r)).toBeGreaterThan(MAX_DLQ_RECORD_BYTES - 64);
    expect(r.value!.equals(value.subarray(0, r.value!.length))).toBe(true);
    expect(r.key).toEqual(Buffer.from('order-1'));
    expect(r.headers[HEADERS.producer]).toEqual(Buffer.from('shop')); // small originals stay
    expect(JSON.parse(String(r.headers[HEADERS.dlqTruncated]))).toEqual({ valueBytes: 1_040_000, keyBytes: 7, droppedHeaders: 0 });
    expect(r.headers[HEADERS.dlqSourceOffset]).toBe('7');
  });

  // A producer writing straight to raw may put anything in sluice-producer; it used to stay on a
  // cut record, and be copied into sluice-dlq-producer, so the record stayed over the limit.
  it('drops a huge sluice-producer header too, and caps its copy', () => {
    const r = deadLetterRecord({ key: Buffer.from('k'), value: Buffer.alloc(600_000), headers: { [HEADERS.producer]: Buffer.alloc(480_000, 0x70) } }, facts);
    expect(size(r)).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
    expect(HEADERS.producer in r.headers).toBe(false);
    expect(String(r.headers[HEADERS.dlqProducer])).toBe('p'.repeat(256));
    expect(r.value!.length).toBe(600_000);
  });

  it('drops large original headers and cuts a large key before the value, keeping its own headers', () => {
    const r = deadLetterRecord(
      { key: Buffer.alloc(300_000, 0x6b), value: Buffer.from('{}'), headers: { big: Buffer.alloc(700_000), small: Buffer.from('x') } },
      facts,
    );
    expect(size(r)).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
    expect(r.key!.length).toBe(1024);
    expect(r.value).toEqual(Buffer.from('{}'));
    expect('big' in r.headers || 'small' in r.headers).toBe(false);
    expect(r.headers[HEADERS.dlqReason]).toBe('EVENT_TOO_LARGE');
    expect(JSON.parse(String(r.headers[HEADERS.dlqTruncated]))).toEqual({ valueBytes: 2, keyBytes: 300_000, droppedHeaders: 2 });
  });

  it('keeps a short replay marker when it cuts (a cut failed replay is still told from a first dead letter)', () => {
    const headers = { [HEADERS.replayOf]: Buffer.from('sluice.dlq/0/17'), big: Buffer.alloc(950_000) };
    const r = deadLetterRecord({ key: null, value: Buffer.from('{}'), headers }, facts);
    expect(size(r)).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
    expect('big' in r.headers).toBe(false);
    expect(r.headers[HEADERS.replayOf]).toEqual(Buffer.from('sluice.dlq/0/17'));
    const long = deadLetterRecord({ key: null, value: Buffer.from('{}'), headers: { [HEADERS.replayOf]: Buffer.alloc(950_000, 0x61) } }, facts);
    expect(HEADERS.replayOf in long.headers).toBe(false);
  });

  // Headers were read into one value per name: a record that repeated a name reached the DLQ, and
  // a replay, with its last value only.
  it('keeps every value of a repeated header, in order, and counts each one in its size', () => {
    const headers = { tag: Buffer.from('c'), traceparent: Buffer.from('00-x') };
    const r = deadLetterRecord({ key: null, value: Buffer.from('{}'), headers, repeatedHeaders: { tag: [Buffer.from('a'), Buffer.from('b'), Buffer.from('c')] } }, facts);
    expect(r.headers.tag).toEqual([Buffer.from('a'), Buffer.from('b'), Buffer.from('c')]);
    expect(r.headers.traceparent).toEqual(Buffer.from('00-x'));
    const big = Buffer.alloc(300_000);
    const cut = deadLetterRecord({ key: null, value: Buffer.alloc(10), headers: { tag: big }, repeatedHeaders: { tag: [big, big, big] } }, facts);
    expect(size(cut)).toBeLessThanOrEqual(MAX_DLQ_RECORD_BYTES);
    expect('tag' in cut.headers).toBe(false);
    expect(JSON.parse(String(cut.headers[HEADERS.dlqTruncated]))).toMatchObject({ droppedHeaders: 3 });
  });

  it('keeps a header named __proto__ as a header', () => {
    const headers: Record<string, Buffer> = Object.create(null);
    headers['__proto__'] = Buffer.from('p');
    const r = deadLetterRecord({ key: null, value: Buffer.from('{}'), headers }, facts);
    expect(Object.keys(r.headers)).toContain('__proto__');
    expect(r.headers['__proto__']).toEqual(Buffer.from('p'));
  });
});
