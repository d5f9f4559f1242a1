import { chaosRun } from './support/chaos';
import { testBrokers } from './support/env';

// The short CI version of the local storage faults (the full runs: RELIABILITY.md): the lake on
// its own tmpfs, remounted read-only twice (every write fails with EROFS), then shrunk until it
// is full (ENOSPC) and grown back, while the load runs; then the oracle audit. Mounting needs
// root, which the test machine has: without it the run fails with the mount's own error rather
// than being skipped.

describe('chaos (short): lake storage failing and full under load', () => {
  const run = chaosRun('chaos-storage', () => ({ scenarios: ['storage-fail', 'disk-full'], seconds: 60, rate: 150, seed: 7, brokers: testBrokers(), drainTimeoutMs: 150_000 }), 480_000);

  it('injected the faults it promises, and merge-compaction met them without a restart', () => {
    const result = run();
    // Both rounds (the summary line "logged N read-only-filesystem errors" is not a round).
    expect(result.faults.filter((f) => /\blake read-only for\b/.test(f)).length).toBe(2);
    expect(result.faults.some((f) => /shrunk to .* \(full\)/.test(f))).toBe(true);
    expect(result.eventsSent).toBeGreaterThan(1000);
    expect(result.restarts['merge-compaction'] ?? 0).toBe(0);
  });

  it('lost nothing, doubled nothing, silver and gold equal the oracle, the DLQ equals the invalid input', () => {
    const result = run();
    expect([...result.problems, ...result.audit.problems]).toEqual([]);
    expect(result.audit.dlqRecords - result.audit.dlqRawRepeats).toBe(result.oracle.dlq.size);
  });
});
