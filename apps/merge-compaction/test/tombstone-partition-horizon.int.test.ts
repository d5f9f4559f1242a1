import { CONTRACTS } from '@sluice/contracts';
import { partitionForKey } from '@sluice/kafka';
import type { MergeApp } from '../src/app';
import { diffAgainstOracle, produce, readRows, caughtUp, startApp, orderSend, TestEnv, TEST_PARTITIONS, waitFor } from './support/harness';

// Bug guarded: the tombstone memory expired deletes against the newest tombstone of ANY Kafka
// partition. With one partition ahead of another in event time by more than the watermark (a
// lagging consumer, a catch-up, a producer's clock), the other partition's deletes were forgotten
// in the step that folded them, and an older upsert within that partition's own watermark
// resurrected the entity, also after a restart (the rebuild had the same global horizon).
describe('tombstones are held within the watermark of their own partition', () => {
  const env = new TestEnv('tombstone-horizon', [CONTRACTS.orders]);
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
  const MIN = 60_000;
  const order = (id: string, version: number, op: 'upsert' | 'delete', at: number) => orderSend(t0, id, version, op, at);
  /** A key of the given partition (the producer's murmur2 partitioner). */
  const keyOn = (partition: number, prefix: string) => {
    for (let i = 0; ; i++) if (partitionForKey(`${prefix}${i}`, TEST_PARTITIONS) === partition) return `${prefix}${i}`;
  };
  const [ahead, k, l] = [keyOn(0, 'ahead-'), keyOn(1, 'k-'), keyOn(1, 'l-')];

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  // A 10-minute watermark; partition 0 runs 30 minutes ahead of partition 1 in event time.
  const start = () => startApp(env, apps, { SLUICE_SILVER_FOLD_PERCENT: '0', SLUICE_DEDUP_WATERMARK_MS: String(10 * MIN) });

  it('does not resurrect an entity of a partition behind the others, also after a restart', async () => {
    const phase1 = [order(k, 1, 'upsert', 0), order(k, 3, 'delete', 2 * MIN), order(ahead, 1, 'upsert', 30 * MIN), order(ahead, 2, 'delete', 31 * MIN)];
    const first = await start();
    await produce(env, phase1);
    await waitFor('phase 1 folded', async () => (await diffAgainstOracle(env, phase1)).length === 0, 60_000, 500);
    // k's older v2, one minute after its creation: well within partition 1's watermark.
    const lateK = [order(k, 2, 'upsert', MIN)];
    await produce(env, lateK);
    await waitFor('late k in bronze', async () => Number((await readRows(env, 'bronze_orders', 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0) === 5, 60_000, 500);
    await waitFor('late k folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    expect(await diffAgainstOracle(env, [...phase1, ...lateK])).toEqual([]);
    // The same after a restart: the memory is rebuilt from bronze.
    const phase2 = [order(l, 1, 'upsert', 3 * MIN), order(l, 3, 'delete', 4 * MIN)];
    await produce(env, phase2);
    await waitFor('phase 2 folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    await first.stop();
    await start();
    const lateL = [order(l, 2, 'upsert', 3.5 * MIN)];
    await produce(env, lateL);
    const all = [...phase1, ...lateK, ...phase2, ...lateL];
    let problems: string[] = [];
    await waitFor('silver equals the fold by version', async () => (problems = await diffAgainstOracle(env, all)).length === 0, 60_000, 500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    expect(await readRows(env, 'silver_orders', 'SELECT order_id FROM t')).toEqual([]);
  });
});
