import { AvroDecoder, CONTRACTS, encodeSingleObject } from '@sluice/contracts';
import { createTelemetry, TRACEPARENT_HEADER } from '@sluice/telemetry';
import { decodeRecord, type BronzeRecord } from './bronze-record';
import { sampledTraceparent, traceBronzeAppend } from './trace';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const tp = (flags: string, trace = TRACE, span = SPAN) => Buffer.from(`00-${trace}-${span}-${flags}`);
const orders = CONTRACTS.orders;
const decoder = new AvroDecoder([orders]);

function record(offset: number, headers?: Record<string, Buffer>): BronzeRecord {
  const event = {
    event_id: `e-${offset}`,
    event_time: Date.UTC(2026, 10, 29),
    producer: 'p',
    schema_version: 1,
    version: 1,
    op: 'upsert',
    order_id: `ord-${offset}`,
    payload: { customer_id: 'c', status: 'paid', total_cents: 5, currency: 'EUR', item_count: 1 },
  };
  const value = encodeSingleObject(orders.versions[0].schema, event);
  const r = decodeRecord({ topic: 'orders.valid', partition: 1, offset, value, size: value.length, headers }, orders, decoder);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value;
}

describe('sampledTraceparent', () => {
  it('keeps only well-formed sampled headers', () => {
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: tp('01') })).toBe(tp('01').toString('latin1'));
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: tp('00') })).toBeUndefined();
    expect(sampledTraceparent({})).toBeUndefined();
    expect(sampledTraceparent(undefined)).toBeUndefined();
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: tp('x1') })).toBeUndefined();
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: tp('01', '0'.repeat(32)) })).toBeUndefined();
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: tp('01', TRACE, '0'.repeat(16)) })).toBeUndefined();
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: Buffer.from(`ff-${TRACE}-${SPAN}-01`) })).toBeUndefined();
    expect(sampledTraceparent({ [TRACEPARENT_HEADER]: Buffer.from('01') })).toBeUndefined();
  });

  it('is carried by decodeRecord only when sampled', () => {
    expect(record(1, { [TRACEPARENT_HEADER]: tp('01') }).traceparent).toBe(tp('01').toString('latin1'));
    expect(record(2, { [TRACEPARENT_HEADER]: tp('00') }).traceparent).toBeUndefined();
    expect(record(3).traceparent).toBeUndefined();
  });
});

describe('traceBronzeAppend', () => {
  it('records one child span per sampled record of the commit, marking duplicates', async () => {
    const telemetry = createTelemetry({ service: 'merge-compaction', traces: { kind: 'memory' }, subscribeChannels: false, logLevel: 'silent' });
    try {
      const other = '11111111111111111111111111111111';
      const records = [record(10, { [TRACEPARENT_HEADER]: tp('01') }), record(11), record(12, { [TRACEPARENT_HEADER]: tp('00') }), record(13, { [TRACEPARENT_HEADER]: tp('01', other) })];
      const written = new Set(records.slice(0, 3));
      expect(traceBronzeAppend(telemetry, records, written, { table: 'bronze_orders', version: 4, durationMs: 12 })).toBe(2);
      const spans = telemetry.finishedSpans();
      expect(spans.map((s) => [s.traceId, s.parentSpanId, s.name, s.kind])).toEqual([
        [TRACE, SPAN, 'merge.bronze-append', 'consumer'],
        [other, SPAN, 'merge.bronze-append', 'consumer'],
      ]);
      expect(spans[0].attributes).toEqual({ table: 'bronze_orders', version: 4, topic: 'orders.valid', partition: 1, offset: 10, outcome: 'written' });
      expect(spans[1].attributes).toMatchObject({ offset: 13, outcome: 'duplicate' });
      expect(spans[0].durationUs).toBeGreaterThanOrEqual(12_000);
    } finally {
      await telemetry.shutdown();
    }
  });
});
