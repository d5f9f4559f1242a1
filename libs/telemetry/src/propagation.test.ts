import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { activeTraceIds, extractTraceContext, injectSampledTraceHeaders, injectTraceHeaders, isSampledTraceparent, sampledTraceparentText } from './propagation';
import type { SpanRecord } from './span-exporters';
import { createTelemetry } from './telemetry';

const quiet = () => new Writable({ write: (_c, _e, done) => done() });

describe('trace context in headers', () => {
  const t = createTelemetry({ service: 'ingest', logDestination: quiet(), traces: { kind: 'memory' } });
  afterAll(() => t.shutdown());

  it('round-trips the active span through traceparent, also as Kafka Buffer headers', () => {
    const headers: Record<string, string> = {};
    const ids = t.withSpan('produce', (span) => {
      injectTraceHeaders(headers);
      return { traceId: span.traceId, spanId: span.spanId };
    });
    expect(headers.traceparent).toBe(`00-${ids.traceId}-${ids.spanId}-01`);

    // What the Kafka client hands back on the consumer side: Buffers, sometimes a list.
    for (const carrier of [
      { traceparent: Buffer.from(headers.traceparent) },
      { traceparent: [Buffer.from(headers.traceparent)] },
      { TraceParent: headers.traceparent },
    ]) {
      const child = t.withSpan('consume', (span) => ({ traceId: span.traceId, spanId: span.spanId }), {
        parent: extractTraceContext(carrier),
      });
      expect(child.traceId).toBe(ids.traceId);
      const rec = t.finishedSpans().find((s) => s.spanId === child.spanId);
      expect(rec?.parentSpanId).toBe(ids.spanId);
    }
  });

  it('starts a new trace from missing or malformed headers instead of failing', () => {
    for (const carrier of [
      undefined,
      {},
      { traceparent: 'garbage' },
      { traceparent: '00-00000000000000000000000000000000-0000000000000000-01' },
      { traceparent: Buffer.from([0xff, 0xfe, 0x00]) },
      { traceparent: [] },
    ]) {
      const id = t.withSpan('root', (span) => span.spanId, { parent: extractTraceContext(carrier) });
      const rec = t.finishedSpans().find((s) => s.spanId === id);
      expect(rec).toBeDefined();
      expect(rec?.parentSpanId).toBeUndefined();
    }
  });

  it('writes nothing outside a span', () => {
    expect(injectTraceHeaders({})).toEqual({});
    expect(injectSampledTraceHeaders({})).toEqual({});
    expect(activeTraceIds()).toBeUndefined();
  });

  it('injectSampledTraceHeaders writes a sampled context and leaves an unsampled one out', async () => {
    const sampled = t.withSpan('produce', (span) => ({ headers: injectSampledTraceHeaders<Record<string, string>>({}), spanId: span.spanId }));
    expect(sampled.headers.traceparent).toMatch(new RegExp(`^00-[0-9a-f]{32}-${sampled.spanId}-01$`));

    const never = createTelemetry({ service: 'ingest', logDestination: quiet(), traces: { kind: 'memory' }, traceSampleRatio: 0 });
    try {
      const unsampled = never.withSpan('produce', () => ({ plain: injectTraceHeaders<Record<string, string>>({}), sampledOnly: injectSampledTraceHeaders<Record<string, string>>({}) }));
      // The span exists (flags 00, so injectTraceHeaders writes it); only the sampled variant skips it.
      expect(unsampled.plain.traceparent).toMatch(/-00$/);
      expect(unsampled.sampledOnly).toEqual({});
      // A caller from outside cannot force sampling with the flag: the ratio decides (by trace id).
      const parent = extractTraceContext({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
      const child = never.withSpan('produce', () => injectSampledTraceHeaders<Record<string, string>>({}), { parent });
      expect(child).toEqual({});
    } finally {
      await never.shutdown();
    }
  });

  it('keeps the span active across awaits and marks a throwing span failed', async () => {
    await expect(
      t.withSpan('fails', async () => {
        await new Promise((r) => setTimeout(r, 5));
        expect(activeTraceIds()).toBeDefined();
        throw Object.assign(new Error('boom'), { code: 'LAKE_COMMIT_CONFLICT' });
      }),
    ).rejects.toThrow('boom');
    const rec = t.finishedSpans().find((s) => s.name === 'fails');
    expect(rec?.status).toBe('error');
    expect(rec?.statusMessage).toBe('boom');
    expect(rec?.attributes['error.code']).toBe('LAKE_COMMIT_CONFLICT');
    expect(() => t.withSpan('sync-fail', () => { throw new Error('sync'); })).toThrow('sync');
    expect(t.finishedSpans().find((s) => s.name === 'sync-fail')?.status).toBe('error');
  });
});

describe('sampling a trace that arrives from another process', () => {
  it('is decided by trace id, so services with the same ratio agree, whatever the sampled flag says', async () => {
    const services = [0, 1, 2].map(() => createTelemetry({ service: 'validate', logDestination: quiet(), traces: { kind: 'memory' }, traceSampleRatio: 0.5 }));
    try {
      let sampled = 0;
      for (let i = 1; i <= 64; i++) {
        const traceId = (BigInt(i) * 0x9e3779b97f4a7c15n).toString(16).padStart(32, '0').slice(-32);
        // Flag set (-01) or cleared (-00): a client cleared it to switch tracing off for its events.
        const decisions = services.flatMap((s) =>
          ['01', '00'].map((flag) => s.withSpan('route', () => injectSampledTraceHeaders<Record<string, string>>({}), { parent: extractTraceContext({ traceparent: `00-${traceId}-00f067aa0ba902b7-${flag}` }) }).traceparent !== undefined),
        );
        expect(new Set(decisions).size).toBe(1);
        if (decisions[0]) sampled++;
      }
      // About half, never all: the flag alone did not decide.
      expect(sampled).toBeGreaterThan(0);
      expect(sampled).toBeLessThan(64);
    } finally {
      await Promise.all(services.map((s) => s.shutdown()));
    }
  });
});

describe('one event, three services, one trace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-telemetry-'));
  const file = join(dir, 'spans.jsonl');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('links ingest → validate → merge-compaction through headers into one JSON-lines file', async () => {
    const make = (service: 'ingest' | 'validate' | 'merge-compaction') =>
      createTelemetry({ service, logDestination: quiet(), traces: { kind: 'jsonl', path: file } });
    const ingest = make('ingest');
    const validate = make('validate');
    const merge = make('merge-compaction');

    // Each hop only sees the previous hop's record headers, as over Kafka.
    const raw = ingest.withSpan('ingest.request', () => injectTraceHeaders<Record<string, unknown>>({}), { kind: 'server' });
    const valid = await validate.withSpan(
      'validate.event',
      async () => {
        await new Promise((r) => setImmediate(r));
        return injectTraceHeaders<Record<string, unknown>>({ 'content-type': 'avro' });
      },
      { parent: extractTraceContext(toKafka(raw)), kind: 'consumer' },
    );
    merge.withSpan('merge.event', () => undefined, { parent: extractTraceContext(toKafka(valid)), kind: 'consumer' });

    await Promise.all([ingest.shutdown(), validate.shutdown(), merge.shutdown()]);
    const spans: SpanRecord[] = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(spans.map((s) => s.service).sort()).toEqual(['ingest', 'merge-compaction', 'validate']);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    const byName = new Map(spans.map((s) => [s.name, s]));
    expect(byName.get('ingest.request')?.parentSpanId).toBeUndefined();
    expect(byName.get('validate.event')?.parentSpanId).toBe(byName.get('ingest.request')?.spanId);
    expect(byName.get('merge.event')?.parentSpanId).toBe(byName.get('validate.event')?.spanId);
    expect(byName.get('validate.event')?.kind).toBe('consumer');
  });
});

function toKafka(headers: Record<string, unknown>): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(String(v))]));
}

// The sampled-flag check validate and merge-compaction run per consumed record.
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const tp = (flags: string, trace = TRACE, span = SPAN) => Buffer.from(`00-${trace}-${span}-${flags}`);

describe('isSampledTraceparent', () => {
  it('accepts sampled headers and refuses unsampled, absent and malformed ones', () => {
    expect(isSampledTraceparent(tp('01'))).toBe(true);
    expect(isSampledTraceparent(tp('03'))).toBe(true);
    expect(isSampledTraceparent(tp('00'))).toBe(false);
    expect(isSampledTraceparent(tp('02'))).toBe(false);
    expect(isSampledTraceparent(undefined)).toBe(false);
    expect(isSampledTraceparent(Buffer.from(''))).toBe(false);
    expect(isSampledTraceparent(tp('0g'))).toBe(false);
    expect(isSampledTraceparent(tp('01', TRACE.toUpperCase()))).toBe(false);
    expect(isSampledTraceparent(tp('01', '0'.repeat(32)))).toBe(false);
    expect(isSampledTraceparent(tp('01', TRACE, '0'.repeat(16)))).toBe(false);
    expect(isSampledTraceparent(Buffer.from(`ff-${TRACE}-${SPAN}-01`))).toBe(false);
    expect(isSampledTraceparent(Buffer.from(`00_${TRACE}-${SPAN}-01`))).toBe(false);
    expect(isSampledTraceparent(Buffer.concat([tp('01'), Buffer.from('-x')]))).toBe(false);
  });

  it('sampledTraceparentText: the same verdict, with the header as text when sampled', () => {
    expect(sampledTraceparentText(tp('01'))).toBe(`00-${TRACE}-${SPAN}-01`);
    // A header inside a larger buffer (as a Kafka client may hand it over): only its own bytes.
    const pooled = Buffer.concat([Buffer.from('xx'), tp('03')]).subarray(2);
    expect(sampledTraceparentText(pooled)).toBe(`00-${TRACE}-${SPAN}-03`);
    expect(sampledTraceparentText(tp('00'))).toBeUndefined();
    expect(sampledTraceparentText(tp('01', '0'.repeat(32)))).toBeUndefined();
  });
});
