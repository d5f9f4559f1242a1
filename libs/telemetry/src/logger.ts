import pino from 'pino';
import { activeTraceIds } from './propagation';

/** Log levels, most verbose first. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The structured logger apps use (pino's interface). */
export type Logger = pino.Logger;

/** Where log lines go; anything with `write(line)`. Default: stdout. */
export interface LogDestination {
  write(line: string): unknown;
}

const SECRET_KEYS = [
  'authorization',
  'password',
  'passwd',
  'secret',
  'apiKey',
  'api_key',
  'token',
  'accessToken',
  'secretKey',
  'secret_key',
  'secretAccessKey',
  'secret_access_key',
  'sasl',
  'cookie',
];
const SECRET_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key', 'x-sluice-api-key'];

/**
 * Paths pino censors ("[REDACTED]"): secret keys at the top level and up to two objects deep
 * (`config.s3.secretAccessKey`), plus credential headers on requests and responses.
 * fast-redact wildcards match one level each, hence the explicit depths.
 */
export const REDACT_PATHS: readonly string[] = [
  ...SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]),
  ...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`, `*.*.headers["${h}"]`]),
];

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  readonly service: string;
  readonly level?: LogLevel;
  readonly destination?: LogDestination;
  /** Extra fields on every line (e.g. `{ instance }`). */
  readonly base?: Readonly<Record<string, unknown>>;
}

/**
 * A pino JSON logger: `service` on every line, `trace_id`/`span_id` of the active span when
 * there is one (so logs join traces), secrets redacted, ISO timestamps.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service, ...(options.base ?? {}) },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: [...REDACT_PATHS], censor: '[REDACTED]' },
      formatters: { level: (label) => ({ level: label }) },
      mixin() {
        const ids = activeTraceIds();
        return ids ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
      },
    },
    (options.destination ?? pino.destination({ sync: false })) as pino.DestinationStream,
  );
}
