import { bucketOf, CONTRACTS, HEADERS, encodeSingleObject, AvroDecoder, toRow, utcDate } from '@sluice/contracts';
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
    expect(decodeRecord(raw(Buffer.from('not avro')), orders, decoder)).toMatchObject({ ok: false });
    const click = encodeSingleObject(CONTRACTS.clickstream.latest.schema, {
      ...event,
      order_id: undefined,
      user_id: 'u',
      payload: { session_id: 's', event_type: 'click', page: '/', referrer: null, duration_ms: null },
    });
    expect(decodeRecord(raw(click), orders, decoder)).toMatchObject({ ok: false, issues: [{ code: 'MERGE_CONTRACT_MISMATCH' }] });
  });

  it('utcDateOf agrees with the contracts date across day boundaries', () => {
    for (const t of [0, 86_399_999, 86_400_000, Date.UTC(2026, 0, 1) - 1, Date.UTC(2026, 0, 1), Date.UTC(2030, 5, 7, 12)]) {
      expect(utcDateOf(t)).toBe(utcDate(t));
    }
  });
});
