import { loadConfig } from '@sluice/config';
import { duckdbMemoryMbFor, loadMergeConfig, mergeConfigSchema } from './config';

describe('merge-compaction config', () => {
  it('refuses a misspelt setting of its own; Kubernetes service links and other SLUICE_ names only get a warning', () => {
    const env = { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_INGEST_PORT: 'tcp://10.0.0.1:8080', SLUICE_TEST_DIR: '/tmp/x' };
    expect(() => loadMergeConfig({ ...env, SLUICE_VACUUM_RETENTION: '3600000' })).toThrow(/did you mean SLUICE_VACUUM_RETENTION_MS/);
    expect(loadMergeConfig(env).vacuumRetentionMs).toBeGreaterThan(0);
  });

  it('defaults to every role, embedded', () => {
    const c = loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: '127.0.0.1:19092' });
    expect([...c.roles].sort()).toEqual(['compaction', 'tier1', 'tier2']);
    expect(c.batchMaxMs).toBe(1000);
  });

  it('parses a role subset and reports every problem at once', () => {
    const c = loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_ROLES: 'tier2, compaction' });
    expect([...c.roles]).toEqual(['tier2', 'compaction']);
    expect(() => loadConfig(mergeConfigSchema, { SLUICE_ROLES: 'tier1,tier3', SLUICE_BATCH_MAX_MS: 'soon' })).toThrow(
      /SLUICE_ROLES unknown role\(s\) tier3[\s\S]*SLUICE_KAFKA_BROKERS is required[\s\S]*SLUICE_BATCH_MAX_MS must be an integer/,
    );
  });

  it('refuses timer settings a Node timer cannot hold, and keeps long durations that are no timers', () => {
    const env = { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_COMPACTION_INTERVAL_MS: '4294967296', SLUICE_SHUTDOWN_TIMEOUT_MS: '2147483648' };
    expect(() => loadConfig(mergeConfigSchema, env)).toThrow(/SLUICE_COMPACTION_INTERVAL_MS must be ≤ 2147483647[\s\S]*SLUICE_SHUTDOWN_TIMEOUT_MS must be ≤ 2147483647/);
    // librdkafka bounds max.poll.interval.ms (the stall timeout + 30 s) at 24 h.
    expect(() => loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_STALL_TIMEOUT_MS: '86400000' })).toThrow(/SLUICE_STALL_TIMEOUT_MS must be ≤ 86370000/);
    // 30 days of vacuum retention is a duration, compared with file times, never a timer.
    expect(loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_VACUUM_RETENTION_MS: String(30 * 86_400_000) }).vacuumRetentionMs).toBe(2_592_000_000);
  });

  it('refuses a small-file size above the compaction target (those files would never be compacted)', () => {
    expect(() => loadMergeConfig({ SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_COMPACTION_SMALL_FILE_BYTES: '200000000', SLUICE_COMPACTION_TARGET_FILE_BYTES: '134217728' })).toThrow(
      /SLUICE_COMPACTION_SMALL_FILE_BYTES \(200000000\) must not exceed SLUICE_COMPACTION_TARGET_FILE_BYTES \(134217728\)/,
    );
    expect(loadMergeConfig({ SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_COMPACTION_SMALL_FILE_BYTES: '134217728' }).compactionSmallFileBytes).toBe(134_217_728);
  });

  it('takes a bronze watch interval of 0 (off) or at least 50 ms, nothing in between', () => {
    const load = (ms: string) => loadMergeConfig({ SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_BRONZE_WATCH_MS: ms }).bronzeWatchMs;
    expect(() => load('5')).toThrow(/SLUICE_BRONZE_WATCH_MS must be 0 \(off\) or at least 50, got 5/);
    expect([load('0'), load('50')]).toEqual([0, 50]);
    expect(loadMergeConfig({ SLUICE_KAFKA_BROKERS: 'b:1' }).bronzeWatchMs).toBe(250);
  });

  it('refuses a vacuum retention so short that vacuum deletes files a MERGE has not committed yet', () => {
    expect(() => loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_VACUUM_RETENTION_MS: '0' })).toThrow(
      /SLUICE_VACUUM_RETENTION_MS must be ≥ 3600000/,
    );
    expect(loadConfig(mergeConfigSchema, { SLUICE_KAFKA_BROKERS: 'b:1', SLUICE_VACUUM_RETENTION_MS: '3600000' }).vacuumRetentionMs).toBe(3_600_000);
  });

  it("bounds DuckDB by the setting, else by half the container's memory limit, else leaves DuckDB's default", () => {
    const GiB = 1024 ** 3;
    expect(duckdbMemoryMbFor(1024, 8 * GiB)).toBe(1024); // an explicit setting wins
    expect(duckdbMemoryMbFor(0, 2 * GiB)).toBe(1024);
    expect(duckdbMemoryMbFor(0, 100 * 1024 ** 2)).toBe(64); // never below 64 MiB
    expect(duckdbMemoryMbFor(0, undefined)).toBeUndefined();
  });
});

describe('merge-compaction config: S3 credentials', () => {
  it('takes both or neither, and no whitespace at their ends', () => {
    const env = { SLUICE_KAFKA_BROKERS: 'b:1' };
    expect(loadMergeConfig({ ...env, SLUICE_S3_ACCESS_KEY_ID: 'id', SLUICE_S3_SECRET_ACCESS_KEY: 'secret' }).s3SecretAccessKey).toBe('secret');
    expect(() => loadMergeConfig({ ...env, SLUICE_S3_SECRET_ACCESS_KEY: 'secret' })).toThrow('SLUICE_S3_ACCESS_KEY_ID and SLUICE_S3_SECRET_ACCESS_KEY must be set together');
    expect(() => loadMergeConfig({ ...env, SLUICE_S3_ACCESS_KEY_ID: 'id ', SLUICE_S3_SECRET_ACCESS_KEY: 'secret' })).toThrow('SLUICE_S3_ACCESS_KEY_ID must not begin or end with whitespace');
  });
});
