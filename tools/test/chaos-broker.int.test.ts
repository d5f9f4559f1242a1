import * as os from 'node:os';
import * as path from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { freeBrokerPort } from '../src/bench/stack';
import { failureReport, runChaos, type ChaosResult } from '../src/chaos/run';

// Short CI version of the broker scenario: a PRIVATE broker (never the shared test broker) is
// stopped and started while load runs through HTTP and straight into raw; then the oracle audit.
describe('chaos (short): broker stopped and restarted under load', () => {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'chaos-broker-'));
  let result: ChaosResult;

  beforeAll(async () => {
    // kafka.sh uses the port and the next one (controller), below the ephemeral range.
    const port = await freeBrokerPort();
    result = await runChaos({
      scenarios: ['broker'],
      seconds: 30,
      rate: 150,
      seed: 7,
      brokerPort: port,
      workDir,
      drainTimeoutMs: 150_000,
      keep: Boolean(process.env.CHAOS_KEEP), // keeps the stack's logs, lake and broker data to look into a failure
      log: (l) => process.env.CHAOS_VERBOSE && process.stderr.write(`${l}\n`),
    });
  }, 330_000);

  afterAll(() => process.env.CHAOS_KEEP || rmSync(workDir, { recursive: true, force: true }));

  it('stopped the broker and the senders had to retry', () => {
    expect(result.faults.filter((f) => /broker stopped/.test(f)).length).toBeGreaterThanOrEqual(1);
    expect(result.faults.filter((f) => /broker started/.test(f)).length).toBe(result.faults.filter((f) => /broker stopped/.test(f)).length);
    expect(result.retries.http + result.retries.raw).toBeGreaterThan(0);
  });

  it('lost nothing, doubled nothing, silver and gold equal the oracle, the DLQ equals the invalid input', () => {
    // On failure the faults and the services' warnings come first (the work directory is gone in CI).
    expect(failureReport(result)).toEqual([]);
    expect(result.audit.dlqRecords).toBe(result.oracle.dlq.size);
  });
});
