export {
  SERVICES,
  type ServiceId,
  type MetricType,
  type MetricSpec,
  METRICS,
  type MetricKey,
  type CatalogEntry,
  servicePrefix,
  metricName,
  emits,
  metricCatalog,
  lookupSeries,
} from './catalog';
export {
  PROMETHEUS_CONTENT_TYPE,
  type LabelsOf,
  type CounterOf,
  type GaugeOf,
  type HistogramOf,
  type InstrumentOf,
  type SluiceMetrics,
} from './metrics';
export {
  type TraceContext,
  type HeaderValue,
  type HeadersLike,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  injectTraceHeaders,
  injectSampledTraceHeaders,
  extractTraceContext,
  activeTraceIds,
  isSampledTraceparent,
  sampledTraceparentText,
} from './propagation';
export { type TraceExportConfig, type SpanRecord, JsonLinesSpanExporter } from './span-exporters';
export { type SpanKindName, type SpanOptions, type SpanHandle } from './tracing';
export { LOG_LEVELS, type LogLevel, type Logger, type LogDestination, type LoggerOptions, REDACT_PATHS, createLogger } from './logger';
export { CHANNELS, type TableStatsEvent, type ProducerQueueEvent } from './channels';
export { type HookRequest, type HookReply, httpMetricsHook } from './http-hook';
export { type OpsServerOptions, type OpsServer, startOpsServer } from './ops-server';
export { StallWatch } from './stall-watch';
export { exitWhenNotLive, hardExit } from './hard-exit';
export { telemetryConfigFields, type TelemetryConfig, telemetryOptionsFromConfig } from './config';
export { type Sample, type Exposition, type ExpositionCheck, parseExposition, checkExposition, sampleValue } from './exposition';
export { type TelemetryOptions, type Telemetry, createTelemetry } from './telemetry';
