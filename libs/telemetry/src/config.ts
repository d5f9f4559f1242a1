import { int, oneOf, str } from '@sluice/config';
import { SluiceError } from '@sluice/errors';
import { LOG_LEVELS, type LogLevel } from './logger';
import type { TraceExportConfig } from './span-exporters';

/**
 * Environment fields every service adds to its own config schema:
 * `loadConfig({ ...appFields, ...telemetryConfigFields }, process.env)`.
 */
export const telemetryConfigFields = {
  logLevel: oneOf('LOG_LEVEL', LOG_LEVELS, { default: 'info', doc: 'pino log level' }),
  // Not `memory`: an in-process exporter keeps every span for ever (tests create it in code).
  tracesExporter: oneOf('TRACES_EXPORTER', ['none', 'jsonl'] as const, {
    default: 'none',
    doc: 'where finished spans go',
  }),
  tracesFile: str('TRACES_FILE', { default: '-', doc: 'JSON-lines span file when TRACES_EXPORTER=jsonl' }),
  tracesSampleRatio: str('TRACES_SAMPLE_RATIO', {
    default: '1',
    pattern: /^(0(\.\d+)?|1(\.0+)?)$/,
    doc: 'share of traces sampled, 0..1, decided by trace id for new traces and traces from another process; spans of this process follow their parent',
  }),
  opsHost: str('OPS_HOST', { default: '127.0.0.1', doc: 'ops server bind address; 0.0.0.0 in containers' }),
  opsPort: int('OPS_PORT', { default: 9464, min: 0, max: 65535, doc: 'ops server port: /metrics of every service (never on an API port), and /healthz, /readyz (the probes of services without an HTTP API)' }),
};

/** The values {@link telemetryConfigFields} produce. */
export interface TelemetryConfig {
  readonly logLevel: LogLevel;
  readonly tracesExporter: 'none' | 'memory' | 'jsonl';
  readonly tracesFile: string;
  readonly tracesSampleRatio: string;
  readonly opsHost: string;
  readonly opsPort: number;
}

/** Turns loaded telemetry config into {@link createTelemetry} options (minus `service`). */
export function telemetryOptionsFromConfig(config: TelemetryConfig): {
  logLevel: LogLevel;
  traces: TraceExportConfig;
  traceSampleRatio: number;
} {
  let traces: TraceExportConfig;
  if (config.tracesExporter === 'jsonl') {
    if (config.tracesFile === '-' || config.tracesFile === '') {
      throw new SluiceError('TELEMETRY_CONFIG_INVALID', 'TRACES_FILE is required when TRACES_EXPORTER=jsonl');
    }
    traces = { kind: 'jsonl', path: config.tracesFile };
  } else {
    traces = { kind: config.tracesExporter };
  }
  return { logLevel: config.logLevel, traces, traceSampleRatio: Number(config.tracesSampleRatio) };
}
