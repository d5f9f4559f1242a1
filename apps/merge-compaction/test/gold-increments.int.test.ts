import { CONTRACTS } from '@sluice/contracts';
import type { MergeApp } from '../src/app';
import type { Send } from '../src/oracle/oracle';
import { caughtUp, diffAgainstOracle, orderSend, produce, readRows, startApp, TestEnv, waitFor } from './support/harness';

// Gold adds each step's bronze increment to the stored measures of the windows it touches. A step
// that is behind leaves the rest of bronze's snapshot for the next step, which then reads the same
// bronze version: its sums must still replace the rows the previous step wrote (merge versions
// grow per row, not with bronze's version).
describe('gold from bronze increments', () => {
  const env = new TestEnv('gold-inc', [CONTRACTS.orders]);
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  it('sums increments of one bronze snapshot over several steps, and adds later ones to the same windows', async () => {
    // Tier 1 alone first: the whole stream lands in bronze before any gold step reads it.
    const tier1 = await startApp(env, apps, { SLUICE_ROLES: 'tier1' });
    // 600 events in two minute windows; the 240 offsets a step may take are shared by the partitions.
    const sends: Send[] = Array.from({ length: 600 }, (_, i) => orderSend(t0, `o${i}`, 1, 'upsert', (i % 2) * 60_000 + i));
    await produce(env, sends);
    await waitFor('the stream in bronze', async () => Number((await readRows(env, CONTRACTS.orders.tables.bronze, 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0) === sends.length, 60_000, 300);
    await tier1.stop();
    const tier2 = await startApp(env, apps, { SLUICE_ROLES: 'tier2', SLUICE_MERGE_MAX_ROWS: '240', SLUICE_GOLD_INTERVAL_MS: '0' });
    let problems: string[] = [];
    await waitFor('gold equals the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 120_000, 500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    await tier2.stop();

    // Later events into the same windows, with both roles running: added to the stored counts.
    await startApp(env, apps, { SLUICE_ROLES: 'tier1,tier2' });
    const later = Array.from({ length: 50 }, (_, i) => orderSend(t0, `p${i}`, 1, 'upsert', (i % 2) * 60_000 + 30_000 + i));
    await produce(env, later);
    await waitFor('the later events folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    await waitFor('gold equals the oracle again', async () => (problems = await diffAgainstOracle(env, [...sends, ...later])).length === 0, 60_000, 500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
  }, 300_000);
});

// A gold step takes at most SLUICE_MERGE_MAX_ROWS offsets. Held to SLUICE_GOLD_INTERVAL_MS even
// when the last step was behind, gold kept up with at most that many offsets per interval (20k/s
// by default) and fell behind for good above it.
describe('gold behind bronze', () => {
  const env = new TestEnv('gold-behind', [CONTRACTS.orders]);
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 11, 0, 0);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  it('steps again at once while a step left rows behind, whatever the interval', async () => {
    const tier1 = await startApp(env, apps, { SLUICE_ROLES: 'tier1' });
    const sends: Send[] = Array.from({ length: 600 }, (_, i) => orderSend(t0, `q${i}`, 1, 'upsert', (i % 2) * 60_000 + i));
    await produce(env, sends);
    await waitFor('the stream in bronze', async () => Number((await readRows(env, CONTRACTS.orders.tables.bronze, 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0) === sends.length, 60_000, 300);
    await tier1.stop();
    // Three steps of 240 offsets at least; with an interval of 10 minutes, only the first would
    // run inside this test's minute.
    await startApp(env, apps, { SLUICE_ROLES: 'tier2', SLUICE_MERGE_MAX_ROWS: '240', SLUICE_GOLD_INTERVAL_MS: '600000' });
    let problems: string[] = [];
    await waitFor('gold equals the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 60_000, 500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
  }, 300_000);
});
