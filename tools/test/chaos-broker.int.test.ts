import { freePort } from '@sluice/testing';
import { failureReport } from '../src/chaos/run';
import { chaosRun } from './support/chaos';

// Short CI version of the broker scenario: a PRIVATE broker (never the shared test broker) is
// crashed (SIGKILL) and started again while load runs through HTTP and straight into raw (a
// longer run also stops it cleanly); then the oracle audit.
describe('chaos (short): broker crashed and restarted under load', () => {
  // CHAOS_KEEP keeps the stack's logs, lake and broker data to look into a failure.
  const run = chaosRun(
    'chaos-broker',
    // kafka.sh uses the port and the next one (controller), below the ephemeral range.
    async () => ({ scenarios: ['broker'], seconds: 30, rate: 150, seed: 7, brokerPort: await freePort({ following: 1 }), drainTimeoutMs: 150_000 }),
    330_000,
  );

  it('crashed the broker (SIGKILL) and the senders had to retry', () => {
    const result = run();
    expect(result.faults.filter((f) => /broker stopped by SIGKILL/.test(f))).toHaveLength(1);
    expect(result.faults.filter((f) => /broker started/.test(f)).length).toBe(result.faults.filter((f) => /broker stopped/.test(f)).length);
    expect(result.retries.http + result.retries.raw).toBeGreaterThan(0);
  });

  it('lost nothing, doubled nothing, silver and gold equal the oracle, the DLQ equals the invalid input', () => {
    const result = run();
    // On failure the faults and the services' warnings come first (the work directory is gone in CI).
    expect(failureReport(result)).toEqual([]);
    expect(result.audit.dlqRecords - result.audit.dlqRawRepeats).toBe(result.oracle.dlq.size);
  });
});
