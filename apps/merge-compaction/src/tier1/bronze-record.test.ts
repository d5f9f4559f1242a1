import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { bucketOf, CONTRACTS, HEADERS, encodeSingleObject, AvroDecoder, toRow, utcDate, type AnyContract } from '@sluice/contracts';
import { decodeRecord, utcDateOf } from './bronze-record';

const orders = CONTRACTS.orders;
const event = {
  event_id: 'e-1',
  event_time: Date.UTC(2026, 10, 29, 23, 59, 59, 999),
  producer: 'p',
  schema_version: 1,
  version: 3,
  op: 'upsert',
  order_id: 'ord-42',
  payload: { customer_id: 'c', status: 'paid', total_cents: 5, currency: 'EUR', item_count: 1 },
};

describe('decodeRecord', () => {
  const decoder = new AvroDecoder([orders, CONTRACTS.clickstream]);
  const raw = (value: Buffer | null) => ({ topic: 't', partition: 2, offset: 7, value, timestamp: 123, size: value?.length ?? 0 });

  it('decodes a v1 record into the latest columns with contracts placement', () => {
    const r = decodeRecord(raw(encodeSingleObject(orders.versions[0].schema, event)), orders, decoder);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    expect(r.value.writerVersion).toBe(1);
    expect(r.value.bucket).toBe(bucketOf('ord-42', orders.buckets));
    expect(r.value.eventDate).toBe('2026-11-29');
    expect(toRow(orders, r.value.event)).toMatchObject({ order_id: 'ord-42', status: 'paid', coupon_code: null });
  });

  it('marks a record the DLQ tool replayed (its sluice-replay-of header), and only that', () => {
    const value = encodeSingleObject(orders.versions[0].schema, event);
    const replayed = decodeRecord({ ...raw(value), headers: { [HEADERS.replayOf]: Buffer.from('sluice.dlq/0/5') } }, orders, decoder);
    const plain = decodeRecord({ ...raw(value), headers: { traceparent: Buffer.from('00-x') } }, orders, decoder);
    expect(replayed.ok && replayed.value.replayed).toBe(true);
    expect(plain.ok && plain.value.replayed).toBe(false);
  });

  it('reports an empty value, garbage and a record of another contract instead of throwing', () => {
    expect(decodeRecord(raw(null), orders, decoder)).toMatchObject({ ok: false, issues: [{ code: 'MERGE_RECORD_EMPTY' }] });
    expect(decodeRecord(raw(Buffer.from('not avro')), orders, decoder)).toMatchObject({ ok: false, issues: [{ code: 'AVRO_FRAMING_UNKNOWN' }] });
    const click = encodeSingleObject(CONTRACTS.clickstream.latest.schema, {
      ...event,
      order_id: undefined,
      user_id: 'u',
      payload: { session_id: 's', event_type: 'click', page: '/', referrer: null, duration_ms: null },
    });
    expect(decodeRecord(raw(click), orders, decoder)).toMatchObject({ ok: false, issues: [{ code: 'MERGE_CONTRACT_MISMATCH' }] });
    // A long event_time past a Date's range (a foreign writer): a DLQ issue, not a RangeError.
    for (const event_time of [9e15, 253_402_300_800_000, -1, -62_135_596_800_000]) {
      expect(decodeRecord(raw(encodeSingleObject(orders.versions[0].schema, { ...event, event_time })), orders, decoder)).toMatchObject({ ok: false, issues: [{ code: 'MERGE_EVENT_TIME_INVALID' }] });
    }
    const last = decodeRecord(raw(encodeSingleObject(orders.versions[0].schema, { ...event, event_time: 253_402_300_799_999 })), orders, decoder);
    expect(last.ok && last.value.eventDate).toBe('9999-12-31');
  });

  it('counts what a buffered record holds on the heap, not its wire size', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // Heap a batch of decoded records holds, and what they are counted at, per record; one call
    // per try, so nothing of an earlier try is still reachable when the next one starts.
    const once = (contract: AnyContract, raws: ReturnType<typeof raw>[]) => {
      gc();
      gc();
      const before = process.memoryUsage().heapUsed;
      const held = raws.map((r) => {
        const d = decodeRecord(r, contract, decoder);
        if (!d.ok) throw new Error(JSON.stringify(d.issues));
        return d.value;
      });
      gc();
      gc();
      return { heap: (process.memoryUsage().heapUsed - before) / raws.length, counted: held.reduce((sum, r) => sum + r.bytes, 0) / raws.length };
    };
    // The median of three tries: under load a collection can finish sweeping garbage of earlier
    // work inside one try's window, which moved one try by megabytes (seen in CI: a negative heap).
    const measure = (contract: AnyContract, make: (i: number) => Record<string, unknown>) => {
      const raws = Array.from({ length: 50_000 }, (_, i) => raw(encodeSingleObject(contract.latest.schema, make(i))));
      const tries = [once(contract, raws), once(contract, raws), once(contract, raws)].sort((a, b) => a.heap - b.heap);
      return tries[1];
    };
    const clickEvent = (i: number, page: string) => ({
      ...event,
      event_id: `e-${i}`,
      order_id: undefined,
      user_id: `u-${i}`,
      payload: { session_id: `s-${i}`, event_type: 'click', page: `${page}${i}`, referrer: null, duration_ms: i },
    });
    const cases = {
      orders: measure(orders, (i) => ({ ...event, event_id: `e-${i}`, order_id: `ord-${i}`, version: i })),
      clicks: measure(CONTRACTS.clickstream, (i) => clickEvent(i, '/p/')),
      longPages: measure(CONTRACTS.clickstream, (i) => clickEvent(i, `/${'x'.repeat(1000)}/`)),
    };
    // Not under the heap (the buffer bound must not undercount; 1.05–1.2 × measured), with room
    // for the heap's own noise. At most about twice it: once the decoder runs optimised, V8 lays
    // the same records out smaller (250–430 bytes per orders record measured in this test), and
    // the estimate follows the larger layout.
    for (const { heap, counted } of Object.values(cases)) {
      expect(counted / heap).toBeGreaterThan(0.9);
      expect(counted / heap).toBeLessThan(2.5);
    }
  });

  it('utcDateOf agrees with the contracts date across day boundaries', () => {
    for (const t of [0, 86_399_999, 86_400_000, Date.UTC(2026, 0, 1) - 1, Date.UTC(2026, 0, 1), Date.UTC(2030, 5, 7, 12)]) {
      expect(utcDateOf(t)).toBe(utcDate(t));
    }
  });
});
