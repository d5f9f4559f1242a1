import { bool, int, list, loadConfig, MAX_POLL_INTERVAL_MS, setTogether, MAX_SESSION_TIMEOUT_MS, STALL_TO_POLL_INTERVAL_MS, str, timerMs, type ConfigOf, url } from '@sluice/config';
import { DEFAULT_LIMITS, MAX_REMEMBERED_MISSES } from '@sluice/contracts';
import { KAFKA_SECURITY_PREFIXES, kafkaSecurityConfigFields } from '@sluice/kafka';
import { telemetryConfigFields } from '@sluice/telemetry';

/** Environment schema of validate; loaded once in main.ts. */
export const validateConfigSchema = {
  brokers: list('KAFKA_BROKERS', { doc: 'bootstrap brokers host:port,...' }),
  groupId: str('VALIDATE_GROUP_ID', { default: 'sluice-validate', doc: 'consumer group; every instance shares it' }),
  instanceId: str('VALIDATE_INSTANCE_ID', {
    pattern: /^[A-Za-z0-9._-]{1,200}$/,
    doc: 'stable, unique id of this instance (pod name): transactional.id <group>-<id>, so a restart fences its dead predecessor at once',
  }),
  rawTopic: str('VALIDATE_RAW_TOPIC', { default: '', allowEmpty: true, doc: 'raw topic; empty = the contracts constant' }),
  dlqTopic: str('VALIDATE_DLQ_TOPIC', { default: '', allowEmpty: true, doc: 'DLQ topic; empty = the contracts constant' }),
  validTopicPrefix: str('VALIDATE_VALID_TOPIC_PREFIX', { default: '', allowEmpty: true, doc: 'prefix for valid topics (tests); empty = contracts constants' }),
  schemaRegistryUrl: url('SCHEMA_REGISTRY_URL', {
    default: '',
    allowEmpty: true,
    doc: 'Confluent-compatible registry resolving the schema ids of Confluent-framed Avro events; empty = such events go to the DLQ as AVRO_WRITER_UNKNOWN',
  }),
  schemaRegistryUsername: str('SCHEMA_REGISTRY_USERNAME', { default: '', allowEmpty: true, doc: 'basic-auth user of the registry (Confluent Cloud: the API key); empty = none' }),
  schemaRegistryPassword: str('SCHEMA_REGISTRY_PASSWORD', { default: '', allowEmpty: true, secret: true, doc: 'basic-auth password of the registry (from a Secret)' }),
  maxEventBytes: int('VALIDATE_MAX_EVENT_BYTES', { default: 1_000_000, min: 64, doc: 'larger events go to the DLQ' }),
  maxFutureSkewMs: int('EVENT_MAX_FUTURE_SKEW_MS', {
    default: DEFAULT_LIMITS.maxFutureSkewMs,
    min: 0,
    doc: 'event_time further ahead of this clock → DLQ RULE_TIMESTAMP_FUTURE; ingest reads the same variable, set both alike',
  }),
  maxEventAgeMs: int('EVENT_MAX_AGE_MS', {
    default: DEFAULT_LIMITS.maxAgeMs,
    min: 60_000,
    doc: 'event_time older than this → DLQ RULE_TIMESTAMP_EXPIRED; ingest reads the same variable, set both alike',
  }),
  // At most the schema-id misses the learner remembers: a batch's distinct unknown ids must all
  // stay remembered while its lookups run, or a slow registry can keep it from ever finishing.
  maxBatchMessages: int('VALIDATE_MAX_BATCH_MESSAGES', { default: 5000, min: 1, max: MAX_REMEMBERED_MISSES, doc: 'records per transaction' }),
  maxBatchBytes: int('VALIDATE_MAX_BATCH_BYTES', {
    default: 8 * 1024 * 1024,
    min: 1024,
    doc: 'raw bytes per transaction (a batch ends with the record that reaches it); bounds memory when events are large',
  }),
  maxBatchWaitMs: timerMs('VALIDATE_MAX_BATCH_WAIT_MS', { default: 100, min: 1 }),
  transactionTimeoutMs: timerMs('VALIDATE_TRANSACTION_TIMEOUT_MS', { default: 60_000, min: 1000 }),
  stallTimeoutMs: timerMs('VALIDATE_STALL_TIMEOUT_MS', {
    default: 120_000,
    min: 10_000,
    max: MAX_POLL_INTERVAL_MS - STALL_TO_POLL_INTERVAL_MS,
    doc: 'a batch (poll, produce, commit or abort) or connect running longer than this is a hung Kafka client: /healthz fails and the process exits; must exceed the transaction timeout',
  }),
  progressWindowMs: timerMs('VALIDATE_PROGRESS_WINDOW_MS', {
    default: 120_000,
    min: 5_000,
    doc: "how often the group's progress through raw is checked: a partition this instance held for a whole window, with records to read and none received, or (when it held nothing) one no member holds, fails /healthz and ends the process",
  }),
  checkThread: bool('VALIDATE_CHECK_THREAD', {
    default: true,
    doc: "check events against their contracts in a worker thread, starting on the next batch while a transaction commits; false = on the main thread, after the batch is polled",
  }),
  sessionTimeoutMs: timerMs('VALIDATE_SESSION_TIMEOUT_MS', { default: 10_000, min: 6000, max: MAX_SESSION_TIMEOUT_MS, doc: 'group session timeout: how long a dead instance keeps its partitions' }),
  ...kafkaSecurityConfigFields,
  ...telemetryConfigFields,
};

export type ValidateConfig = ConfigOf<typeof validateConfigSchema>;

/** validate's own variable prefixes: a set variable under them that no field reads is reported. */
export const VALIDATE_CONFIG_PREFIXES = ['VALIDATE_', ...KAFKA_SECURITY_PREFIXES] as const;

/** Reads and freezes the configuration from `env`; throws CONFIG_INVALID listing every problem. */
export function loadValidateConfig(env: Record<string, string | undefined>): ValidateConfig {
  return loadConfig(validateConfigSchema, env, { checks: [setTogether(validateConfigSchema, 'schemaRegistryUsername', 'schemaRegistryPassword')], prefixes: VALIDATE_CONFIG_PREFIXES });
}
