import { loadIngestConfig } from './config';

describe('ingest configuration', () => {
  const env = { KAFKA_BROKERS: '127.0.0.1:9092', INGEST_API_KEYS: JSON.stringify([{ producer: 'shop', key: 'k'.repeat(32), contracts: ['*'] }]) };

  it('loads the defaults', () => {
    expect(loadIngestConfig(env)).toMatchObject({ maxBatchEvents: 10_000, maxQueueMessages: 100_000 });
  });

  // A full batch could never fit the producer queue: every one would get 429 and Retry-After, for good.
  it('refuses a batch limit above the producer queue bound', () => {
    expect(() => loadIngestConfig({ ...env, INGEST_MAX_BATCH_EVENTS: '5000', INGEST_MAX_QUEUE_MESSAGES: '4000' })).toThrow(
      /INGEST_MAX_BATCH_EVENTS \(5000\) must not exceed INGEST_MAX_QUEUE_MESSAGES \(4000\)/,
    );
    expect(loadIngestConfig({ ...env, INGEST_MAX_BATCH_EVENTS: '4000', INGEST_MAX_QUEUE_MESSAGES: '4000' }).maxBatchEvents).toBe(4000);
  });

  // A misspelt limit would leave the default in force without a word.
  it('refuses a misspelt setting of its own and names the one it meant', () => {
    expect(() => loadIngestConfig({ ...env, INGEST_MAX_BODY_BYTE: '1048576' })).toThrow(/INGEST_MAX_BODY_BYTE is not a setting; did you mean INGEST_MAX_BODY_BYTES/);
    expect(loadIngestConfig({ ...env, INGEST_SOMETHING_ELSE: '1', VALIDATE_MAX_BODY_BYTE: '1' }).maxBodyBytes).toBe(16 * 1024 * 1024);
  });

  it('refuses registry credentials that are half set, and never shows the password', () => {
    expect(() => loadIngestConfig({ ...env, SCHEMA_REGISTRY_PASSWORD: 'hunter2-registry' })).toThrow(
      'SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD must be set together (SCHEMA_REGISTRY_USERNAME is empty)',
    );
    expect(() => loadIngestConfig({ ...env, SCHEMA_REGISTRY_PASSWORD: 'hunter2-registry' })).not.toThrow(/hunter2/);
    expect(loadIngestConfig({ ...env, SCHEMA_REGISTRY_USERNAME: 'key', SCHEMA_REGISTRY_PASSWORD: 'secret' })).toMatchObject({ schemaRegistryUsername: 'key' });
  });
});

