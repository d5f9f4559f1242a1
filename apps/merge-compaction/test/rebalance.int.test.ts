import { CONTRACTS } from '@sluice/contracts';
import type { MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { diffAgainstOracle, ORACLE_SPECS, produce, startApp, streamOptions, TestEnv, waitFor } from './support/harness';

// Two tier-1 workers in one consumer group, partitions moving between them while the stream
// runs (a second member joins, the first leaves, comes back); tier 2 and compaction run as a
// separate deployment (roles). The oracle still holds: the table, not the group, decides offsets.
describe('merge-compaction rebalance', () => {
  const env = new TestEnv('rebalance', [CONTRACTS.orders, CONTRACTS.inventory]);
  const sends = generateStream([ORACLE_SPECS.orders, ORACLE_SPECS.inventory], streamOptions(37, 800));
  const apps: MergeApp[] = [];

  beforeAll(() => env.createTopics());

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  const start = (roles: string) => startApp(env, apps, { SLUICE_ROLES: roles, SLUICE_BATCH_MAX_MS: '250' }, env.telemetry.logger.child({ worker: apps.length }));

  it('keeps the oracle while partitions move between two workers', async () => {
    const merger = await start('tier2,compaction');
    expect(merger.tier1).toBeUndefined();
    const a = await start('tier1');
    expect(a.tier2).toBeUndefined();
    const quarter = Math.floor(sends.length / 4);
    const producing = (async () => {
      for (let i = 0; i < 4; i++) await produce(env, sends.slice(i * quarter, i === 3 ? sends.length : (i + 1) * quarter), { chunk: 100, pauseMs: 150 });
    })();
    await waitFor('worker A to write', () => (a.tier1?.stats.commits ?? 0) > 2, 60_000);
    const b = await start('tier1');
    await waitFor('worker B to take partitions and write', () => (b.tier1?.stats.commits ?? 0) > 0, 60_000);
    await a.stop();
    const a2 = await start('tier1');
    await producing;
    let problems: string[] = [];
    await waitFor('tables to equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 180_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    // Both members wrote, and the one that rejoined too or the other took over all.
    expect(a.tier1!.stats.written).toBeGreaterThan(0);
    expect(b.tier1!.stats.written + a2.tier1!.stats.written).toBeGreaterThan(0);
  }, 300_000); // above two 60 s waits and the final wait
});
