import * as os from 'node:os';
import * as path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { runChaos, s3FromEnv, type ChaosResult } from '../src/chaos/run';

// Short CI version of the S3 storage scenarios: the lake on the test S3 server (SeaweedFS) behind
// a fault proxy that first loses the answers of 30 % of the requests it carries out, then delays
// every request, then refuses every request with 503 SlowDown, while load runs; then the oracle
// audit, read from the server directly.
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

describe('chaos (short): S3 lake losing answers, slow, then failing, under load', () => {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'chaos-s3-'));
  let result: ChaosResult;

  beforeAll(async () => {
    result = await runChaos({
      // In this order each fault starts well inside the load (s3-fail's second round may not).
      scenarios: ['s3-lost-answers', 's3-slow', 's3-fail'],
      seconds: 80,
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

  it('lost answers, delayed and refused S3 requests, and merge-compaction felt the refusals without a restart', () => {
    const seen = {
      lostAnswers: result.faults.some((f) => /[1-9]\d* requests were carried out with their answer lost/.test(f)),
      delayed: result.faults.some((f) => /[1-9]\d* requests were delayed/.test(f)),
      refused: result.faults.some((f) => /refuses every request/.test(f)),
      felt: result.faults.some((f) => /merge-compaction logged [1-9]\d* SlowDown errors/.test(f)),
      mergeCompactionRestarts: result.restarts['merge-compaction'],
    };
    // The fault log goes with the flags, so a failure shows what happened.
    expect({ ...seen, faults: result.faults }).toEqual({ lostAnswers: true, delayed: true, refused: true, felt: true, mergeCompactionRestarts: 0, faults: result.faults });
  });

  it('lost nothing, doubled nothing, silver equals the oracle, the DLQ equals the invalid input', () => {
    const findings = [...result.problems, ...result.audit.problems];
    expect(findings.length ? [...findings, ...result.warnings] : []).toEqual([]);
    expect(result.audit.dlqRecords).toBe(result.oracle.dlq.size);
  });
});
