import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, hrTimeToMicroseconds } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { SluiceError } from '@sluice/errors';

/**
 * Where finished spans go. `none` drops them; `memory` keeps them for tests
 * (`telemetry.finishedSpans()`); `jsonl` appends one JSON object per span to `path`.
 * An OTLP exporter would be one more variant here (`{ kind: 'otlp', url }`) built in
 * {@link createSpanExporter}; nothing else changes.
 */
export type TraceExportConfig = { kind: 'none' } | { kind: 'memory' } | { kind: 'jsonl'; path: string };

/** One span as written by the `jsonl` exporter and returned by `finishedSpans()`. */
export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  /** Absent on a trace root. */
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: 'internal' | 'server' | 'client' | 'producer' | 'consumer';
  /** `service.name` of the emitting process. */
  readonly service: string;
  /** Start, microseconds since the Unix epoch. */
  readonly startUs: number;
  readonly durationUs: number;
  readonly status: 'unset' | 'ok' | 'error';
  readonly statusMessage?: string;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly links: ReadonlyArray<{ traceId: string; spanId: string }>;
}

const KINDS: Record<SpanKind, SpanRecord['kind']> = {
  [SpanKind.INTERNAL]: 'internal',
  [SpanKind.SERVER]: 'server',
  [SpanKind.CLIENT]: 'client',
  [SpanKind.PRODUCER]: 'producer',
  [SpanKind.CONSUMER]: 'consumer',
};

/** Converts an SDK span to the stable record shape used in files and tests. */
export function toSpanRecord(span: ReadableSpan): SpanRecord {
  const ctx = span.spanContext();
  const status = span.status.code === SpanStatusCode.ERROR ? 'error' : span.status.code === SpanStatusCode.OK ? 'ok' : 'unset';
  return {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: KINDS[span.kind],
    service: String(span.resource.attributes['service.name'] ?? 'unknown'),
    startUs: hrTimeToMicroseconds(span.startTime),
    durationUs: hrTimeToMicroseconds(span.duration),
    status,
    ...(span.status.message ? { statusMessage: span.status.message } : {}),
    attributes: { ...span.attributes },
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
  };
}

/** Appends spans as JSON lines. Several processes may share one file: each write is one append. */
export class JsonLinesSpanExporter implements SpanExporter {
  private ready: Promise<unknown> | undefined;
  private pending = new Set<Promise<void>>();

  constructor(private readonly path: string) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    const text = spans.map((s) => JSON.stringify(toSpanRecord(s)) + '\n').join('');
    this.ready ??= mkdir(dirname(this.path), { recursive: true });
    const write = this.ready
      .then(() => appendFile(this.path, text))
      .then(
        () => done({ code: ExportResultCode.SUCCESS }),
        (error: Error) => done({ code: ExportResultCode.FAILED, error }),
      )
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  async forceFlush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  async shutdown(): Promise<void> {
    await this.forceFlush();
  }
}

/** Builds the exporter for `config`; undefined for `none`. */
export function createSpanExporter(config: TraceExportConfig): SpanExporter | undefined {
  switch (config.kind) {
    case 'none':
      return undefined;
    case 'memory':
      return new InMemorySpanExporter();
    case 'jsonl':
      if (!config.path) throw new SluiceError('TELEMETRY_CONFIG_INVALID', 'the jsonl span exporter needs a file path');
      return new JsonLinesSpanExporter(config.path);
  }
}
