import { loadConfig } from '@sluice/config';
import { ingestConfigSchema } from './config';
import { eventBytesWithin, producerQueueKbytes } from './runtime';

describe('the producer queue bound', () => {
  const env = { KAFKA_BROKERS: '127.0.0.1:9092', INGEST_API_KEYS: JSON.stringify([{ producer: 'shop', key: 'k'.repeat(32), contracts: ['*'] }]) };

  it('holds every byte the in-flight budget lets in, so a batch never fills it partway', () => {
    const config = loadConfig(ingestConfigSchema, env);
    const kbytes = producerQueueKbytes(config.maxInFlightBytes, config.maxQueueMessages);
    expect(kbytes * 1024).toBeGreaterThanOrEqual(config.maxInFlightBytes + config.maxQueueMessages * 1024);
    // The client's own default (128 MiB) was below ingest's default budget (256 MiB).
    expect(kbytes).toBeGreaterThan(131_072);
  });

  it('follows a configured budget and stays within what librdkafka accepts', () => {
    expect(producerQueueKbytes(1024, 10)).toBe(11);
    expect(producerQueueKbytes(2 ** 50, 100_000)).toBe(2_147_483_647);
  });
});

describe('the largest event a raw topic takes', () => {
  it('leaves room for key, headers and framing below max.message.bytes, and never goes below 1', () => {
    expect(eventBytesWithin(1_048_588)).toBe(Math.floor(1_048_588 * 0.98) - 1024);
    expect(eventBytesWithin(1_048_588)).toBeGreaterThan(900_000);
    expect(eventBytesWithin(2000)).toBe(936);
    expect(eventBytesWithin(100)).toBe(1);
  });
});
