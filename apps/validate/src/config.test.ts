import { loadConfig } from '@sluice/config';
import { loadValidateConfig, validateConfigSchema } from './config';

describe('validate config', () => {
  const base = { KAFKA_BROKERS: '127.0.0.1:19092', VALIDATE_INSTANCE_ID: 'v0' };

  it('refuses a misspelt setting of its own', () => {
    expect(() => loadValidateConfig({ ...base, VALIDATE_MAX_BATCH_MESAGES: '100' })).toThrow(/did you mean VALIDATE_MAX_BATCH_MESSAGES/);
  });

  it('keeps a batch within the schema-id misses the learner remembers, so a slow registry cannot keep it from finishing', () => {
    expect(loadConfig(validateConfigSchema, base).maxBatchMessages).toBe(5000);
    expect(loadConfig(validateConfigSchema, { ...base, VALIDATE_MAX_BATCH_MESSAGES: '10000' }).maxBatchMessages).toBe(10_000);
    expect(() => loadConfig(validateConfigSchema, { ...base, VALIDATE_MAX_BATCH_MESSAGES: '10001' })).toThrow(/VALIDATE_MAX_BATCH_MESSAGES must be ≤ 10000/);
  });

  it("refuses Kafka settings beyond librdkafka's own bounds at start, not at consumer creation", () => {
    const env = { ...base, VALIDATE_SESSION_TIMEOUT_MS: '3600001', VALIDATE_STALL_TIMEOUT_MS: '86400000' };
    expect(() => loadConfig(validateConfigSchema, env)).toThrow(/VALIDATE_STALL_TIMEOUT_MS must be ≤ 86370000[\s\S]*VALIDATE_SESSION_TIMEOUT_MS must be ≤ 3600000/);
    expect(loadConfig(validateConfigSchema, { ...base, VALIDATE_SESSION_TIMEOUT_MS: '3600000' }).sessionTimeoutMs).toBe(3_600_000);
  });
});
