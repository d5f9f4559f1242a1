import { CONTRACTS } from '@sluice/contracts';
import type { MergeApp } from '../src/app';
import { diffAgainstOracle, produce, readRows, caughtUp, startApp, orderSend, TestEnv, waitFor } from './support/harness';

// Bug guarded: copy-on-write MERGE removes a deleted row, so an OLDER version arriving after the
// tombstone was folded (in a later fold step, even after a restart) would re-insert the entity.
describe('an older version arriving after its tombstone was folded', () => {
  const env = new TestEnv('tombstone', [CONTRACTS.orders]);
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
  const order = (id: string, version: number, op: 'upsert' | 'delete', at: number) => orderSend(t0, id, version, op, at);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  const start = () => startApp(env, apps, { SLUICE_SILVER_FOLD_PERCENT: '0' });

  it('does not resurrect the entity, also after a restart', async () => {
    const phase1 = [order('A', 1, 'upsert', 0), order('A', 3, 'delete', 2000), order('B', 1, 'upsert', 0), order('B', 3, 'delete', 2000)];
    const first = await start();
    await produce(env, phase1);
    await waitFor('phase 1 folded', async () => (await diffAgainstOracle(env, phase1)).length === 0, 60_000, 500);
    // A's older v2 arrives to the same process; B's after a restart (memory rebuilt from bronze).
    const lateA = [order('A', 2, 'upsert', 1000)];
    await produce(env, lateA);
    await waitFor('late A in bronze', async () => Number((await readRows(env, 'bronze_orders', 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0) === 5, 60_000, 500);
    await waitFor('late A folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    expect(await diffAgainstOracle(env, [...phase1, ...lateA])).toEqual([]);
    await first.stop();
    await start();
    const lateB = [order('B', 2, 'upsert', 1000), order('C', 1, 'upsert', 3000)];
    await produce(env, lateB);
    const all = [...phase1, ...lateA, ...lateB];
    let problems: string[] = [];
    await waitFor('silver equals the fold by version', async () => (problems = await diffAgainstOracle(env, all)).length === 0, 60_000, 500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    const silver = await readRows(env, 'silver_orders', 'SELECT order_id FROM t ORDER BY order_id');
    expect(silver.map((r) => r.order_id)).toEqual(['C']);
  });
});
