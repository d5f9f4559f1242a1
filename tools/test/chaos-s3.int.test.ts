import { failureReport } from '../src/chaos/run';
import { chaosRun } from './support/chaos';
import { testBrokers, testS3 } from './support/env';

// Short CI version of the S3 storage scenarios: the lake on the test S3 server (SeaweedFS) behind
// a fault proxy that first loses the answers of 30 % of the requests it carries out, then delays
// every request, then refuses every request with 503 SlowDown, while load runs; then the oracle
// audit, read from the server directly.
describe('chaos (short): S3 lake losing answers, slow, then failing, under load', () => {
  const run = chaosRun(
    'chaos-s3',
    () => ({
      // In this order each fault starts well inside the load (s3-fail's second round may not).
      scenarios: ['s3-lost-answers', 's3-slow', 's3-fail'],
      seconds: 80,
      rate: 100,
      seed: 11,
      brokers: testBrokers(),
      s3: testS3(),
      drainTimeoutMs: 180_000,
    }),
    480_000,
  );

  it('lost answers, delayed and refused S3 requests, and merge-compaction felt the refusals without a restart', () => {
    const result = run();
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

  it('lost nothing, doubled nothing, silver and gold equal the oracle, the DLQ equals the invalid input', () => {
    const result = run();
    expect(failureReport(result)).toEqual([]);
    expect(result.audit.dlqRecords - result.audit.dlqRawRepeats).toBe(result.oracle.dlq.size);
  });
});
