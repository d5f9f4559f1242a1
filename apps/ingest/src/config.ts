import { int, json, list, loadConfig, setTogether, str, timerMs, type ConfigCheck, type ConfigOf, url } from '@sluice/config';
import { DEFAULT_LIMITS } from '@sluice/contracts';
import { KAFKA_SECURITY_PREFIXES, kafkaSecurityConfigFields } from '@sluice/kafka';
import { telemetryConfigFields } from '@sluice/telemetry';
import { checkApiKeys, type ApiKeyEntry } from './auth/api-keys';

/** Environment schema of ingest; loaded once in main.ts. */
export const ingestConfigSchema = {
  host: str('INGEST_HOST', { default: '127.0.0.1', doc: 'listen address' }),
  port: int('INGEST_PORT', { default: 8080, min: 0, max: 65535, doc: 'listen port (0 = any)' }),
  brokers: list('KAFKA_BROKERS', { doc: 'bootstrap brokers host:port,...' }),
  rawTopic: str('INGEST_RAW_TOPIC', { default: '', allowEmpty: true, doc: 'raw topic; empty = the contracts constant' }),
  apiKeys: json<ApiKeyEntry[]>('INGEST_API_KEYS', checkApiKeys, {
    secret: true,
    doc: 'JSON [{"producer":"shop","key":"<≥24 chars>","contracts":["orders"] or ["*"],"envelopeProducers":["shop-web"] or ["*"], optional, default [producer],"previousKeys":["<old key>"], optional, during a rotation}]',
  }),
  schemaRegistryUrl: url('SCHEMA_REGISTRY_URL', {
    default: '',
    allowEmpty: true,
    doc: 'Confluent-compatible registry resolving the schema ids of Confluent-framed Avro bodies; empty = such events are rejected as AVRO_WRITER_UNKNOWN',
  }),
  schemaRegistryUsername: str('SCHEMA_REGISTRY_USERNAME', { default: '', allowEmpty: true, doc: 'basic-auth user of the registry (Confluent Cloud: the API key); empty = none' }),
  schemaRegistryPassword: str('SCHEMA_REGISTRY_PASSWORD', { default: '', allowEmpty: true, secret: true, doc: 'basic-auth password of the registry (from a Secret)' }),
  maxBodyBytes: int('INGEST_MAX_BODY_BYTES', { default: 16 * 1024 * 1024, min: 1024, doc: 'request body limit' }),
  maxBatchEvents: int('INGEST_MAX_BATCH_EVENTS', { default: 10_000, min: 1, doc: 'events per request limit' }),
  maxEventBytes: int('INGEST_MAX_EVENT_BYTES', { default: 512 * 1024, min: 64, max: 900_000, doc: 'per-event limit (raw topic message size)' }),
  maxDepth: int('INGEST_MAX_DEPTH', { default: 32, min: 2, max: 256, doc: 'nesting depth limit of one event' }),
  maxFutureSkewMs: int('EVENT_MAX_FUTURE_SKEW_MS', {
    default: DEFAULT_LIMITS.maxFutureSkewMs,
    min: 0,
    doc: 'event_time further ahead of this clock → RULE_TIMESTAMP_FUTURE; validate reads the same variable, set both alike',
  }),
  maxEventAgeMs: int('EVENT_MAX_AGE_MS', {
    default: DEFAULT_LIMITS.maxAgeMs,
    min: 60_000,
    doc: 'event_time older than this → RULE_TIMESTAMP_EXPIRED; validate reads the same variable, set both alike',
  }),
  requestTimeoutMs: timerMs('INGEST_REQUEST_TIMEOUT_MS', {
    default: 60_000,
    min: 1000,
    doc: 'longest time to receive a whole request; a slower one gets 408 and its budget back (a trickled body held it for ever)',
  }),
  maxInFlightBytes: int('INGEST_MAX_INFLIGHT_BYTES', { default: 256 * 1024 * 1024, min: 1024, doc: 'request bytes held at once before 429' }),
  maxInFlightPercentPerProducer: int('INGEST_MAX_INFLIGHT_PERCENT_PER_PRODUCER', {
    default: 50,
    min: 1,
    max: 100,
    doc: 'share of INGEST_MAX_INFLIGHT_BYTES one producer (API key identity) may hold at once before its requests get 429, so one key cannot lock the others out; 100 = no per-producer bound',
  }),
  maxQueueMessages: int('INGEST_MAX_QUEUE_MESSAGES', { default: 100_000, min: 1, doc: 'producer queue bound; a request that does not fit gets 429' }),
  retryAfterSeconds: int('INGEST_RETRY_AFTER_SECONDS', { default: 1, min: 1, max: 300 }),
  deliveryTimeoutMs: timerMs('INGEST_DELIVERY_TIMEOUT_MS', { default: 15_000, min: 1000, doc: 'producer message timeout' }),
  shutdownTimeoutMs: timerMs('INGEST_SHUTDOWN_TIMEOUT_MS', { default: 20_000, min: 100 }),
  probeIntervalMs: timerMs('INGEST_PROBE_INTERVAL_MS', { default: 1000, min: 100, doc: 'broker availability probe period' }),
  wedgeAfterMs: timerMs('INGEST_WEDGE_AFTER_MS', {
    default: 60_000,
    min: 2000,
    doc: 'deliveries failing this long while the broker answers probes = a wedged producer: /healthz fails and the process exits; at least twice the delivery timeout',
  }),
  ...kafkaSecurityConfigFields,
  ...telemetryConfigFields,
};

export type IngestConfig = ConfigOf<typeof ingestConfigSchema>;

/** ingest's own variable prefixes: a set variable under them that no field reads is reported. */
export const INGEST_CONFIG_PREFIXES = ['INGEST_', ...KAFKA_SECURITY_PREFIXES] as const;

/** Rules over several fields of {@link ingestConfigSchema}. */
export const ingestConfigChecks: readonly ConfigCheck<typeof ingestConfigSchema>[] = [
  setTogether(ingestConfigSchema, 'schemaRegistryUsername', 'schemaRegistryPassword'),
  {
    // A full batch could never fit the producer queue: it would get 429 and Retry-After forever.
    fields: ['maxBatchEvents', 'maxQueueMessages'],
    problem: (c) =>
      c.maxBatchEvents <= c.maxQueueMessages
        ? undefined
        : `INGEST_MAX_BATCH_EVENTS (${c.maxBatchEvents}) must not exceed INGEST_MAX_QUEUE_MESSAGES (${c.maxQueueMessages}): a full batch would never fit the producer queue`,
  },
];

/** Loads and checks ingest's configuration from `env`. */
export function loadIngestConfig(env: Record<string, string | undefined>): IngestConfig {
  return loadConfig(ingestConfigSchema, env, { checks: ingestConfigChecks, prefixes: INGEST_CONFIG_PREFIXES });
}
