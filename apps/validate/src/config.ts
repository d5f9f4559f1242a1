import { int, list, str, type ConfigOf } from '@sluice/config';

/** Environment schema of validate; loaded once in main.ts. */
export const validateConfigSchema = {
  brokers: list('KAFKA_BROKERS', { doc: 'bootstrap brokers host:port,...' }),
  groupId: str('VALIDATE_GROUP_ID', { default: 'sluice-validate', doc: 'consumer group; every instance shares it' }),
  transactionalId: str('VALIDATE_TRANSACTIONAL_ID', {
    default: '',
    allowEmpty: true,
    doc: 'transactional.id prefix; empty = <group>-<hostname>-<pid>. Fencing across restarts relies on the group generation (KIP-447).',
  }),
  rawTopic: str('VALIDATE_RAW_TOPIC', { default: '', allowEmpty: true, doc: 'raw topic; empty = the contracts constant' }),
  dlqTopic: str('VALIDATE_DLQ_TOPIC', { default: '', allowEmpty: true, doc: 'DLQ topic; empty = the contracts constant' }),
  validTopicPrefix: str('VALIDATE_VALID_TOPIC_PREFIX', { default: '', allowEmpty: true, doc: 'prefix for valid topics (tests); empty = contracts constants' }),
  maxEventBytes: int('VALIDATE_MAX_EVENT_BYTES', { default: 1_000_000, min: 64, doc: 'larger events go to the DLQ' }),
  maxBatchMessages: int('VALIDATE_MAX_BATCH_MESSAGES', { default: 5000, min: 1, doc: 'records per transaction' }),
  maxBatchWaitMs: int('VALIDATE_MAX_BATCH_WAIT_MS', { default: 100, min: 1 }),
  transactionTimeoutMs: int('VALIDATE_TRANSACTION_TIMEOUT_MS', { default: 60_000, min: 1000 }),
  logLevel: str('VALIDATE_LOG_LEVEL', { default: 'info' }),
};

export type ValidateConfig = ConfigOf<typeof validateConfigSchema>;
