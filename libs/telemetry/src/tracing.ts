import {
  type Attributes,
  type Context,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  context,
  trace,
} from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { ensureContextManager } from './context-manager';
import type { TraceContext } from './propagation';
import { type SpanRecord, type TraceExportConfig, createSpanExporter, toSpanRecord } from './span-exporters';

/** Span kinds apps may use. */
export type SpanKindName = 'internal' | 'server' | 'client' | 'producer' | 'consumer';

/** Options of {@link TracingRuntime.withSpan}. */
export interface SpanOptions {
  /** Parent, e.g. `extractTraceContext(message.headers)`; default: the active span. */
  readonly parent?: TraceContext;
  readonly kind?: SpanKindName;
  /** Low-cardinality facts (topic, partition, batch size); never payloads or secrets. */
  readonly attributes?: Readonly<Record<string, string | number | boolean>>;
  /** Other traces this span continues, e.g. the events of a consumed batch (keep it short). */
  readonly links?: readonly TraceContext[];
  /** Start time in epoch milliseconds, for spans recorded after the fact. */
  readonly startTimeMs?: number;
}

/** What a running span lets callers do. */
export interface SpanHandle {
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span failed; `withSpan` does this itself when the callback throws. */
  fail(error: unknown): void;
  readonly traceId: string;
  readonly spanId: string;
}

/** The tracer side of a telemetry instance. */
export interface TracingRuntime {
  /**
   * Runs `fn` inside a new active span (child of `options.parent` or of the active span) and
   * ends it when `fn` returns or its promise settles; a throw marks the span failed and is
   * rethrown unchanged.
   */
  withSpan<T>(name: string, fn: (span: SpanHandle) => T, options?: SpanOptions): T;
  /** Records a span that already happened (start = now − durationMs), child of the active span. */
  recordSpan(name: string, durationMs: number, options?: SpanOptions & { error?: string }): void;
  /** Spans kept by the `memory` exporter (empty for other exporters). */
  finishedSpans(): SpanRecord[];
  /** Exports buffered spans now. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const KIND: Record<SpanKindName, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/**
 * Builds a tracer provider of its own (not the global one), so several services can live in
 * one test process and still export as distinct `service.name`s.
 */
export function createTracingRuntime(resource: Resource, exportConfig: TraceExportConfig, sampleRatio = 1): TracingRuntime {
  ensureContextManager();
  const exporter = createSpanExporter(exportConfig);
  const processors: SpanProcessor[] = [];
  if (exporter instanceof InMemorySpanExporter) processors.push(new SimpleSpanProcessor(exporter));
  else if (exporter) processors.push(new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: processors,
    // New roots, and parents from another process, are sampled by ratio. The ratio sampler decides
    // by trace id alone, so every service with the same ratio agrees on a trace ingest sampled;
    // a caller outside (a client's `traceparent` at the public ingest edge) can no longer force
    // a span for each of its events in every service by setting the sampled flag, nor switch
    // tracing off for its events by clearing it (a remote parent not sampled was never sampled).
    // (It can still pick trace ids the ratio samples; docs/design/ingest.md says what bounds
    // that.) A local parent (a span of this process) is followed as before.
    sampler: new ParentBasedSampler({
      root: new TraceIdRatioBasedSampler(sampleRatio),
      remoteParentSampled: new TraceIdRatioBasedSampler(sampleRatio),
      remoteParentNotSampled: new TraceIdRatioBasedSampler(sampleRatio),
    }),
  });
  const tracer: Tracer = provider.getTracer('@sluice/telemetry');

  function start(name: string, options: SpanOptions): { span: Span; ctx: Context } {
    const parent = options.parent ?? context.active();
    const links: Link[] = [];
    for (const l of options.links ?? []) {
      const sc = trace.getSpanContext(l);
      if (sc && trace.isSpanContextValid(sc)) links.push({ context: sc });
    }
    const span = tracer.startSpan(
      name,
      {
        kind: KIND[options.kind ?? 'internal'],
        attributes: options.attributes as Attributes | undefined,
        links,
        startTime: options.startTimeMs,
      },
      parent,
    );
    return { span, ctx: trace.setSpan(parent, span) };
  }

  return {
    withSpan<T>(name: string, fn: (span: SpanHandle) => T, options: SpanOptions = {}): T {
      const { span, ctx } = start(name, options);
      const handle = toHandle(span);
      let result: T;
      try {
        result = context.with(ctx, () => fn(handle));
      } catch (err) {
        handle.fail(err);
        span.end();
        throw err;
      }
      if (isPromise(result)) {
        return result.then(
          (v) => {
            span.end();
            return v;
          },
          (err: unknown) => {
            handle.fail(err);
            span.end();
            throw err;
          },
        ) as T;
      }
      span.end();
      return result;
    },
    recordSpan(name, durationMs, options = {}) {
      const endMs = Date.now();
      const { span } = start(name, { ...options, startTimeMs: endMs - Math.max(0, durationMs) });
      if (options.error) span.setStatus({ code: SpanStatusCode.ERROR, message: options.error });
      span.end(endMs);
    },
    finishedSpans() {
      return exporter instanceof InMemorySpanExporter ? exporter.getFinishedSpans().map(toSpanRecord) : [];
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function toHandle(span: Span): SpanHandle {
  const { traceId, spanId } = span.spanContext();
  return {
    traceId,
    spanId,
    setAttribute: (k, v) => void span.setAttribute(k, v),
    fail(error) {
      const e = error instanceof Error ? error : new Error(String(error));
      span.recordException(e);
      const code = (error as { code?: unknown })?.code;
      if (typeof code === 'string') span.setAttribute('error.code', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    },
  };
}

function isPromise<T>(v: T): v is T & Promise<Awaited<T>> {
  return typeof (v as { then?: unknown })?.then === 'function';
}
