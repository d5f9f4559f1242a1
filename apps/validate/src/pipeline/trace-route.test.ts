import { createTelemetry, injectTraceHeaders, TRACEPARENT_HEADER } from '@sluice/telemetry';
import type { RawMessage, RoutedRecord } from '../routing/route';
import { traceRouted } from './trace-route';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const tp = (flags: string, trace = TRACE, span = SPAN) => Buffer.from(`00-${trace}-${span}-${flags}`);

function raw(headers: Record<string, Buffer>, offset = 7): RawMessage {
  return { topic: 'raw', partition: 2, offset, key: null, value: Buffer.from('{}'), headers };
}
function routed(msg: RawMessage, outcome: 'valid' | 'dlq'): RoutedRecord {
  // As routeRecord: a valid record starts without headers, a DLQ record keeps the original ones.
  const headers = outcome === 'valid' ? {} : { ...msg.headers };
  return { outcome, topic: outcome === 'valid' ? 'orders.valid' : 'dlq', key: null, value: msg.value, headers, contract: 'orders', ...(outcome === 'dlq' ? { reason: 'EVENT_NOT_JSON' } : {}) };
}

describe('traceRouted', () => {
  it('records a child span per sampled record and points the output traceparent at it', async () => {
    const telemetry = createTelemetry({ service: 'validate', traces: { kind: 'memory' }, subscribeChannels: false, logLevel: 'silent' });
    try {
      const batch = [raw({ [TRACEPARENT_HEADER]: tp('01') }, 1), raw({ [TRACEPARENT_HEADER]: tp('00') }, 2), raw({}, 3), raw({ [TRACEPARENT_HEADER]: Buffer.from('garbage-01') }, 4), raw({ [TRACEPARENT_HEADER]: tp('01') }, 5)];
      const out = [routed(batch[0], 'valid'), routed(batch[1], 'valid'), routed(batch[2], 'valid'), routed(batch[3], 'dlq'), routed(batch[4], 'dlq')];
      expect(traceRouted(telemetry, batch, out)).toBe(2);
      const spans = telemetry.finishedSpans();
      expect(spans).toHaveLength(2);
      for (const [i, span] of [[0, spans[0]], [4, spans[1]]] as const) {
        expect(span).toMatchObject({ traceId: TRACE, parentSpanId: SPAN, name: 'validate.route', kind: 'consumer', service: 'validate' });
        expect(span.attributes).toMatchObject({ contract: 'orders', outcome: out[i].outcome, topic: 'raw', partition: 2, offset: batch[i].offset });
        expect(String(out[i].headers[TRACEPARENT_HEADER])).toBe(`00-${TRACE}-${span.spanId}-01`);
      }
      expect(spans[1].attributes.reason).toBe('EVENT_NOT_JSON');
      // Unsampled, absent and malformed: untouched (no header added; the DLQ copy keeps its bytes).
      expect(out[1].headers[TRACEPARENT_HEADER]).toBeUndefined();
      expect(out[2].headers[TRACEPARENT_HEADER]).toBeUndefined();
      expect(out[3].headers[TRACEPARENT_HEADER]).toBe(batch[3].headers[TRACEPARENT_HEADER]);
    } finally {
      await telemetry.shutdown();
    }
  });

  it('continues a trace produced by injectTraceHeaders (the ingest side)', async () => {
    const telemetry = createTelemetry({ service: 'validate', traces: { kind: 'memory' }, subscribeChannels: false, logLevel: 'silent' });
    try {
      const headers: Record<string, Buffer> = {};
      telemetry.withSpan('ingest.produce', () => {
        const h = injectTraceHeaders<Record<string, string>>({});
        headers[TRACEPARENT_HEADER] = Buffer.from(h[TRACEPARENT_HEADER]);
      });
      const batch = [raw(headers)];
      const out = [routed(batch[0], 'valid')];
      traceRouted(telemetry, batch, out);
      const [producer, route] = telemetry.finishedSpans();
      expect(route.traceId).toBe(producer.traceId);
      expect(route.parentSpanId).toBe(producer.spanId);
    } finally {
      await telemetry.shutdown();
    }
  });
});
