import { AvroDecoder, CONTRACTS, HEADERS } from '@sluice/contracts';
import { contractsForValidate } from './contracts-adapter';
import { DLQ_HEADERS } from './headers';
import { routeRecord, type RawMessage, type ValidateContracts } from './route';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const contracts = contractsForValidate({ validTopicPrefix: 'p.', now: () => NOW });
const options = { dlqTopic: 'dlq', maxEventBytes: 2048, now: NOW };

function raw(value: Buffer | string | null, headers: Record<string, string> = {}): RawMessage {
  return {
    topic: 'raw',
    partition: 2,
    offset: 41,
    key: Buffer.from('k'),
    value: typeof value === 'string' ? Buffer.from(value) : value,
    headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)])),
  };
}

const order = {
  contract: 'orders',
  event_id: 'e-1',
  event_time: '2026-11-29T11:59:00Z',
  producer: 'shop',
  schema_version: 1,
  version: 4,
  op: 'upsert',
  order_id: 'o-9',
  payload: { customer_id: 'c', status: 'paid', total_cents: 5, currency: 'EUR', item_count: 1 },
};

describe('routeRecord', () => {
  it('sends a valid v1 event to its valid topic as Avro in the latest schema, keyed by entity key, without upstream headers', () => {
    const r = routeRecord(raw(JSON.stringify(order), { [HEADERS.producer]: 'shop-key', [HEADERS.contract]: 'orders', traceparent: 't' }), contracts, options);
    expect(r).toMatchObject({ outcome: 'valid', topic: 'p.sluice.orders.valid', key: 'o-9', contract: 'orders' });
    // A sampled trace context is added by traceRouted; nothing else is carried to the valid topic.
    expect(r.headers).toEqual({});
    const decoded = new AvroDecoder(Object.values(CONTRACTS)).decode(r.value as Buffer);
    expect(decoded.ok && decoded.value.event).toMatchObject({ event_id: 'e-1', event_time: Date.parse(order.event_time), payload: { coupon_code: null } });
  });

  it("carries a DLQ replay's marker onto the valid record (merge-compaction checks bronze for it at any age)", () => {
    const r = routeRecord(raw(JSON.stringify(order), { [HEADERS.producer]: 'shop-key', [HEADERS.replayOf]: 'sluice.dlq/2/7' }), contracts, options);
    expect(r.outcome).toBe('valid');
    expect(Object.keys(r.headers)).toEqual([HEADERS.replayOf]);
    expect(r.headers[HEADERS.replayOf]?.toString()).toBe('sluice.dlq/2/7');
  });

  it('dead-letters with the original bytes, key and headers plus reason, detail, source, producer and time', () => {
    const bytes = JSON.stringify({ ...order, payload: { ...order.payload, total_cents: -1 } });
    const r = routeRecord(raw(bytes, { [HEADERS.producer]: 'shop-key', [HEADERS.contract]: 'orders' }), contracts, options);
    expect(r).toMatchObject({ outcome: 'dlq', topic: 'dlq', reason: 'RULE_RANGE', contract: 'orders' });
    expect(r.value?.toString()).toBe(bytes);
    expect(r.key).toEqual(Buffer.from('k'));
    expect(r.headers[HEADERS.producer]?.toString()).toBe('shop-key');
    expect(r.headers[DLQ_HEADERS.reason]).toBe('RULE_RANGE');
    expect(JSON.parse(String(r.headers[DLQ_HEADERS.detail]))[0]).toMatchObject({ code: 'RULE_RANGE', path: '/payload/total_cents' });
    expect([r.headers[DLQ_HEADERS.sourceTopic], r.headers[DLQ_HEADERS.sourcePartition], r.headers[DLQ_HEADERS.sourceOffset]]).toEqual(['raw', '2', '41']);
    expect(r.headers[DLQ_HEADERS.producer]).toBe('shop-key');
    expect(r.headers[DLQ_HEADERS.time]).toBe('2026-11-29T12:00:00.000Z');
  });

  it.each([
    ['null value', null, 'EVENT_NOT_JSON'],
    ['empty value', '', 'EVENT_NOT_JSON'],
    ['oversize value', 'x'.repeat(2049), 'EVENT_TOO_LARGE'],
    ['garbage', '\u0000\u0001', 'AVRO_FRAMING_UNKNOWN'],
  ])('dead-letters %s', (_name, value, reason) => {
    const r = routeRecord(raw(value as string | null), contracts, options);
    expect(r).toMatchObject({ outcome: 'dlq', reason });
    expect(r.headers[DLQ_HEADERS.producer]).toBe('unknown');
  });

  // A direct producer's contract header naming no contract used to become the DLQ record's
  // contract and a dlqRecords{contract} label value (unbounded).
  it('names the contract of a record dead-lettered before any check only when its header names a known one', () => {
    const big = 'x'.repeat(2049);
    expect(routeRecord(raw(big, { [HEADERS.contract]: 'orders' }), contracts, options)).toMatchObject({ reason: 'EVENT_TOO_LARGE', contract: 'orders' });
    for (const bogus of ['no-such-contract', '__proto__', 'x'.repeat(300)]) {
      const r = routeRecord(raw(big, { [HEADERS.contract]: bogus }), contracts, options);
      expect(r).toMatchObject({ outcome: 'dlq', reason: 'EVENT_TOO_LARGE' });
      expect(r.contract).toBeUndefined();
      expect(DLQ_HEADERS.contract in r.headers).toBe(false);
    }
  });

  it('dead-letters instead of crashing when a contract check throws', () => {
    const throwing: ValidateContracts = {
      check: () => {
        throw new Error('bug in a rule');
      },
    };
    const r = routeRecord(raw(JSON.stringify(order)), throwing, options);
    expect(r).toMatchObject({ outcome: 'dlq', reason: 'VALIDATE_INTERNAL' });
    expect(String(r.headers[DLQ_HEADERS.detail])).toContain('bug in a rule');
  });

  it('dead-letters by the configured event_time limits (EVENT_MAX_FUTURE_SKEW_MS / EVENT_MAX_AGE_MS)', () => {
    const at = (offsetMs: number) => raw(JSON.stringify({ ...order, event_time: new Date(NOW + offsetMs).toISOString() }));
    const tight = contractsForValidate({ validTopicPrefix: 'p.', now: () => NOW, limits: { maxFutureSkewMs: 60_000, maxAgeMs: 3_600_000 } });
    const reason = (c: ValidateContracts, m: RawMessage) => {
      const r = routeRecord(m, c, options);
      return r.outcome === 'dlq' ? r.reason : r.outcome;
    };
    // Two minutes ahead and two hours old: within the defaults, outside the tight limits.
    expect([reason(contracts, at(120_000)), reason(contracts, at(-7_200_000))]).toEqual(['valid', 'valid']);
    expect([reason(tight, at(120_000)), reason(tight, at(-7_200_000))]).toEqual(['RULE_TIMESTAMP_FUTURE', 'RULE_TIMESTAMP_EXPIRED']);
  });

  it("routes its own valid record again when a DLQ replay brings it back to raw (merge-compaction's dead letters keep those bytes)", () => {
    const first = routeRecord(raw(JSON.stringify(order)), contracts, options);
    if (first.outcome !== 'valid') throw new Error(JSON.stringify(first));
    const replayed: RawMessage = { ...raw(null, { [HEADERS.replayOf]: 'sluice.dlq/0/3' }), value: first.value as Buffer };
    const again = routeRecord(replayed, contracts, options);
    expect(again).toMatchObject({ outcome: 'valid', topic: first.topic, key: first.key });
    expect((again as { value: Buffer }).value.equals(first.value as Buffer)).toBe(true);
  });

  it('routes a DLQ replay whatever its age, and still refuses one from the future', () => {
    const tight = contractsForValidate({ validTopicPrefix: 'p.', now: () => NOW, limits: { maxFutureSkewMs: 60_000, maxAgeMs: 3_600_000 } });
    const replayOf = { [HEADERS.replayOf]: 'sluice.dlq/0/17' };
    const at = (offsetMs: number, headers: Record<string, string> = {}) => raw(JSON.stringify({ ...order, event_time: new Date(NOW + offsetMs).toISOString() }), headers);
    const outcome = (m: RawMessage) => {
      const r = routeRecord(m, tight, options);
      return r.outcome === 'dlq' ? r.reason : r.outcome;
    };
    expect(outcome(at(-20 * 86_400_000))).toBe('RULE_TIMESTAMP_EXPIRED');
    expect(outcome(at(-20 * 86_400_000, replayOf))).toBe('valid');
    expect(outcome(at(120_000, replayOf))).toBe('RULE_TIMESTAMP_FUTURE');
  });

  // The time rules were judged at processing time: an event ingest accepted near the age limit was
  // dead-lettered once validate lagged behind it, and a retry could route it otherwise.
  it("judges an event's age and skew as of its record's timestamp, never later than its own clock", () => {
    let clock = NOW;
    const later = contractsForValidate({ validTopicPrefix: 'p.', now: () => clock, limits: { maxFutureSkewMs: 60_000, maxAgeMs: 3_600_000 } });
    const received = (eventOffsetMs: number, timestamp?: number) => ({ ...raw(JSON.stringify({ ...order, event_time: new Date(NOW + eventOffsetMs).toISOString() })), timestamp });
    const outcome = (m: RawMessage) => {
      const r = routeRecord(m, later, options);
      return r.outcome === 'dlq' ? r.reason : r.outcome;
    };
    clock = NOW + 86_400_000; // validate a day behind
    expect(outcome(received(-3_599_000, NOW))).toBe('valid'); // 59m59s old when received
    expect(outcome(received(-3_601_000, NOW))).toBe('RULE_TIMESTAMP_EXPIRED');
    expect(outcome(received(-3_599_000))).toBe('RULE_TIMESTAMP_EXPIRED'); // no timestamp: its clock
    expect(outcome(received(30_000, NOW))).toBe('valid');
    expect(outcome(received(90_000, NOW))).toBe('RULE_TIMESTAMP_FUTURE');
    // A record stamped after validate's clock is judged at the clock.
    clock = NOW;
    expect(outcome(received(90_000, NOW + 86_400_000))).toBe('RULE_TIMESTAMP_FUTURE');
  });

  // A producer writing to raw directly set a megabyte marker: carried onto the valid record, it
  // made a record too large to produce, and the batch failed at every retry (a crash loop).
  it('takes only a marker the DLQ tool could have written for a replay: others are neither carried nor exempt from the age rule', () => {
    const tight = contractsForValidate({ validTopicPrefix: 'p.', now: () => NOW, limits: { maxFutureSkewMs: 60_000, maxAgeMs: 3_600_000 } });
    const old = JSON.stringify({ ...order, event_time: new Date(NOW - 20 * 86_400_000).toISOString() });
    for (const forged of ['x'.repeat(1_000_000), '', 'sluice.dlq/2', 'sluice dlq/2/7', 'sluice.dlq/2/7\n', `${'t'.repeat(250)}/2/7`]) {
      const fresh = routeRecord(raw(JSON.stringify(order), { [HEADERS.replayOf]: forged }), contracts, options);
      expect({ forged: forged.slice(0, 20), outcome: fresh.outcome, headers: fresh.headers }).toEqual({ forged: forged.slice(0, 20), outcome: 'valid', headers: {} });
      const aged = routeRecord(raw(old, { [HEADERS.replayOf]: forged }), tight, options);
      expect(aged.reason).toBe('RULE_TIMESTAMP_EXPIRED');
    }
  });

  it('never files a rejected event under a contract name that is not in the catalog (a metric label and a header)', () => {
    const hostile = 'x'.repeat(5000);
    for (const value of ['{}', JSON.stringify(order)]) {
      const r = routeRecord(raw(value, { [HEADERS.contract]: hostile }), contracts, options);
      expect(r.outcome).toBe('dlq');
      expect(r.contract).toBeUndefined();
      expect(r.headers[DLQ_HEADERS.contract]).toBeUndefined();
    }
  });
});

