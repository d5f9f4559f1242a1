import * as os from 'node:os';
import * as path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { runChaos, s3FromEnv, type ChaosResult } from '../src/chaos/run';

// Short CI version of the S3 storage scenarios: the lake on the test S3 server (SeaweedFS) behind
// a fault proxy that first delays every request, then refuses every request with 503 SlowDown,
// while load runs; then the oracle audit, read from the server directly.
function s3() {
  const server = s3FromEnv();
  if (!server) throw new Error("SLUICE_TEST_S3_* are not set: run 'bash tools/services.d/10-s3.sh start' and export what 'bash tools/services.d/10-s3.sh env' prints (tools/test-all.sh does both)");
  return server;
}

function brokers(): string {
  const b = process.env.SLUICE_TEST_KAFKA_BROKERS;
  if (!b) throw new Error('SLUICE_TEST_KAFKA_BROKERS is not set: start Kafka (tools/kafka/kafka.sh start) and export SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092');
  return b;
}

describe('chaos (short): S3 lake slow, then failing, under load', () => {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'chaos-s3-'));
  let result: ChaosResult;

  beforeAll(async () => {
    result = await runChaos({
      scenarios: ['s3-slow', 's3-fail'],
      seconds: 60,
      rate: 100,
      seed: 11,
      brokers: brokers(),
      s3: s3(),
      workDir,
      drainTimeoutMs: 180_000,
      keep: Boolean(process.env.CHAOS_KEEP),
      log: (l) => process.env.CHAOS_VERBOSE && process.stderr.write(`${l}\n`),
    });
  }, 480_000);

  afterAll(() => process.env.CHAOS_KEEP || rmSync(workDir, { recursive: true, force: true }));

  it('delayed and refused S3 requests, and merge-compaction felt the refusals without a restart', () => {
    expect(result.faults.some((f) => /requests were delayed/.test(f))).toBe(true);
    expect(result.faults.filter((f) => /refuses every request/.test(f)).length).toBeGreaterThanOrEqual(1);
    expect(result.faults.some((f) => /merge-compaction logged [1-9]\d* SlowDown errors/.test(f))).toBe(true);
    expect(result.restarts['merge-compaction']).toBe(0);
  });

  it('lost nothing, doubled nothing, silver equals the oracle, the DLQ equals the invalid input', () => {
    const findings = [...result.problems, ...result.audit.problems];
    expect(findings.length ? [...findings, ...result.warnings] : []).toEqual([]);
    expect(result.audit.dlqRecords).toBe(result.oracle.dlq.size);
  });
});
