import { hostname } from 'node:os';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SluiceError } from '@sluice/errors';
import { SERVICES, type ServiceId } from './catalog';
import { subscribeChannels } from './channels';
import { type LogDestination, type LogLevel, type Logger, createLogger } from './logger';
import { type SluiceMetrics, createMetricsRuntime } from './metrics';
import type { SpanRecord, TraceExportConfig } from './span-exporters';
import { type SpanHandle, type SpanOptions, createTracingRuntime } from './tracing';

/** Options of {@link createTelemetry}. */
export interface TelemetryOptions {
  readonly service: ServiceId;
  /** `service.version`; default "0.0.0". */
  readonly version?: string;
  /** `service.instance.id`, e.g. the pod name; default the host name + pid. */
  readonly instance?: string;
  readonly logLevel?: LogLevel;
  /** Default stdout. */
  readonly logDestination?: LogDestination;
  /** Default `{ kind: 'none' }`. */
  readonly traces?: TraceExportConfig;
  /** Share of new root traces sampled, 0..1; default 1. */
  readonly traceSampleRatio?: number;
  /** Turn adapter channel events into metrics and spans; default true. */
  readonly subscribeChannels?: boolean;
}

/** Logger, metrics and tracing of one service process. */
export interface Telemetry {
  readonly service: ServiceId;
  readonly logger: Logger;
  /** Typed catalog instruments: `metrics.eventsIn.add(n, { outcome: 'accepted' })`. */
  readonly metrics: SluiceMetrics;
  /** The Prometheus text exposition of every recorded metric (serve with PROMETHEUS_CONTENT_TYPE). */
  metricsText(): Promise<string>;
  /** See {@link TracingRuntime.withSpan}. */
  withSpan<T>(name: string, fn: (span: SpanHandle) => T, options?: SpanOptions): T;
  /** A span that already happened, ending now; child of the active span. */
  recordSpan(name: string, durationMs: number, options?: SpanOptions & { error?: string }): void;
  /** Spans kept by the `memory` trace exporter. */
  finishedSpans(): SpanRecord[];
  /** Exports buffered spans and flushes logs. */
  flush(): Promise<void>;
  /** Unsubscribes from channels, flushes and stops exporters. Idempotent. */
  shutdown(): Promise<void>;
}

/**
 * Creates the telemetry of one service. Call once in `main.ts`; pass the result (or its parts)
 * to `build(deps)`. Several instances may coexist in one process (tests): each has its own
 * meter and tracer provider; channel subscriptions are process-wide, so every instance sees
 * every adapter event.
 */
export function createTelemetry(options: TelemetryOptions): Telemetry {
  if (!(SERVICES as readonly string[]).includes(options.service)) {
    throw new SluiceError('TELEMETRY_CONFIG_INVALID', `unknown service "${options.service}"; expected one of ${SERVICES.join(', ')}`);
  }
  const ratio = options.traceSampleRatio ?? 1;
  if (!(ratio >= 0 && ratio <= 1)) {
    throw new SluiceError('TELEMETRY_CONFIG_INVALID', `traceSampleRatio must be within 0..1, got ${ratio}`);
  }
  const instance = options.instance ?? `${hostname()}-${process.pid}`;
  const resource = resourceFromAttributes({
    'service.name': options.service,
    'service.namespace': 'sluice',
    'service.version': options.version ?? '0.0.0',
    'service.instance.id': instance,
  });
  const logger = createLogger({ service: options.service, level: options.logLevel, destination: options.logDestination });
  const meter = createMetricsRuntime(options.service, resource);
  const tracing = createTracingRuntime(resource, options.traces ?? { kind: 'none' }, ratio);
  const unsubscribe =
    options.subscribeChannels === false
      ? () => {}
      : subscribeChannels(meter.metrics, tracing, (channel) =>
          logger.warn({ channel }, 'dropped a malformed telemetry event (reported once per channel)'),
        );

  let closed: Promise<void> | undefined;
  return {
    service: options.service,
    logger,
    metrics: meter.metrics,
    metricsText: () => meter.metricsText(),
    withSpan: (name, fn, opts) => tracing.withSpan(name, fn, opts),
    recordSpan: (name, durationMs, opts) => tracing.recordSpan(name, durationMs, opts),
    finishedSpans: () => tracing.finishedSpans(),
    async flush() {
      await tracing.flush();
      logger.flush();
    },
    shutdown() {
      closed ??= (async () => {
        unsubscribe();
        await tracing.shutdown();
        await meter.shutdown();
        logger.flush();
      })();
      return closed;
    },
  };
}
