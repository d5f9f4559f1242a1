import { diffAgainstOracle } from '../src/chaos/audit';
import { CONTRACTS } from '@sluice/contracts';
import { EventStream } from '../src/generator';
import { chaosRun } from './support/chaos';
import { testBrokers } from './support/env';

// The short CI version of the chaos suite (the full runs: RELIABILITY.md). One stack on the
// shared test broker under load; a replay of the DLQ with the DLQ tool and a SIGKILL of validate
// while it routes the replayed records, the hostile corpus, then a SIGKILL of each service (in
// random order, each restarted by the supervisor), then a consumer tier scaled up and down; then
// the oracle audit.

describe('chaos (short): DLQ replay, poison, SIGKILL of each service, scale under load', () => {
  const run = chaosRun('chaos', () => ({ scenarios: ['replay', 'poison', 'kill-each', 'scale'], seconds: 40, rate: 150, seed: 42, brokers: testBrokers(), drainTimeoutMs: 150_000 }), 540_000);

  it('injected the faults it promises', () => {
    const result = run();
    expect(result.faults.some((f) => /hostile HTTP requests/.test(f))).toBe(true);
    expect(result.faults.some((f) => /hostile records produced to raw/.test(f))).toBe(true);
    expect(result.faults.some((f) => /validate scaled to 3/.test(f))).toBe(true);
    expect(result.faults.some((f) => /DLQ tool replayed \d+ records to raw/.test(f))).toBe(true);
    expect(result.target.replaysSent).toBeGreaterThan(0);
    expect(result.faults.filter((f) => /SIGKILL/.test(f)).length).toBe(5);
    // One restart per SIGKILL and none besides: a service crashing on the poison, or looping on
    // restarts, would converge before the drain and pass the audit.
    expect(Object.values(result.restarts).reduce((a, b) => a + b, 0)).toBe(5);
    expect(result.eventsSent).toBeGreaterThan(1000);
  });

  it('lost nothing, doubled nothing, silver and gold equal the oracle, the DLQ equals the invalid input and each replay came back once', () => {
    const result = run();
    expect([...result.problems, ...result.audit.problems]).toEqual([]);
    expect(result.audit.dlqRecords - result.audit.dlqRawRepeats).toBe(result.oracle.dlq.size + result.target.poisonIds!.size + result.target.poisonWithoutId!);
    expect(result.oracle.dlq.size).toBeGreaterThan(0);
    expect(result.oracle.rejected.size).toBeGreaterThan(0);
  });

  it('the audit fails when the tables miss an acknowledged event or the DLQ misses an invalid one', async () => {
    const result = run();
    // Same tables, an oracle that believes one more valid and one more invalid event were acked.
    const extra = new EventStream({ seed: 9, runId: 'notsent', invalidRate: 0.5 }).take(40);
    result.oracle.add(extra.find((e) => e.kind === 'valid' && e.contract === 'orders' && e.event!.op === 'upsert')!, 'http');
    result.oracle.add(extra.find((e) => e.kind === 'invalid')!, 'raw');
    const diff = await diffAgainstOracle(result.target, result.oracle);
    expect(diff.problems.join('\n')).toMatch(/bronze_orders: 1 acknowledged events lost/);
    expect(diff.problems.join('\n')).toMatch(new RegExp(`${CONTRACTS.orders.aggregates[0].table}: .*(rows, oracle|rows differ)`));
    expect(diff.problems.join('\n')).toMatch(/DLQ: 1 invalid events missing/);
  }, 120_000);
});
