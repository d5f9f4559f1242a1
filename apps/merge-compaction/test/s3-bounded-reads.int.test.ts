import { randomBytes } from 'node:crypto';
import { CONTRACTS } from '@sluice/contracts';
import type { MergeApp } from '../src/app';
import type { Send } from '../src/oracle/oracle';
import { caughtUp, diffAgainstOracle, produce, readRows, startApp, orderSend, TestEnv, waitFor } from './support/harness';

// On S3 every read goes through a bounded file cache per table. Two tier-2 reads spanned bronze
// history: the tombstone rebuild after a restart read every folded bronze file, and a gold step
// with one late event read every bronze file from that event's day to now. Past the cache's
// bound the first files were evicted before DuckDB read them, and the step failed on every retry.
describe('tier 2 on S3 with a bronze larger than its file cache', () => {
  const env = new TestEnv('s3-bounded', [CONTRACTS.orders], { s3: true });
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
  // Incompressible customer ids, so a few thousand events fill megabytes of bronze.
  const order = (id: string, version: number, op: 'upsert' | 'delete', at: number) => orderSend(t0, id, version, op, at, randomBytes(150).toString('base64'));
  // The smallest cache the service takes (1 MiB): reads may pin 1 MiB of it.
  const start = () => startApp(env, apps, { SLUICE_ROLES: 'tier1,tier2', SLUICE_S3_CACHE_BYTES_PER_TABLE: String(1024 * 1024), SLUICE_BATCH_MAX_EVENTS: '1000' });

  const bronzeRows = async () => Number((await readRows(env, CONTRACTS.orders.tables.bronze, 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  it('rebuilds its tombstones and recomputes a late window in reads the cache can hold', async () => {
    const app = await start();
    // Six waves, each in its own minutes and folded before the next, so that each step's reads fit
    // the cache; together they pass it. Versions of 200 orders: silver stays small, bronze grows.
    const first: Send[] = [order('D', 1, 'upsert', 0), order('D', 3, 'delete', 1000)];
    await produce(env, first);
    for (let wave = 0; wave < 6; wave++) {
      const sends = Array.from({ length: 2000 }, (_, i) => order(`o${i % 200}`, wave * 10 + Math.floor(i / 200) + 1, 'upsert', wave * 180_000 + 2000 + i * 20));
      first.push(...sends);
      await produce(env, sends);
      await waitFor(`wave ${wave} in bronze and folded`, async () => (await bronzeRows()) === first.length && (await caughtUp(env, CONTRACTS.orders)), 120_000, 500);
    }
    const bronze = await env.table(CONTRACTS.orders.tables.bronze);
    const bronzeBytes = (await bronze!.snapshot()).files.reduce((n, f) => n + f.size, 0);
    expect(bronzeBytes).toBeGreaterThan(2 * 1024 * 1024);
    await app.stop();

    // A new process rebuilds its tombstones from bronze; then D's older version arrives, and an
    // order two days old.
    await start();
    const late = [order('D', 2, 'upsert', 500), order('L', 1, 'upsert', -2 * 86_400_000)];
    await produce(env, late);
    let problems: string[] = [];
    await waitFor('silver and gold equal the oracle', async () => (problems = await diffAgainstOracle(env, [...first, ...late])).length === 0, 120_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
  }, 360_000);
});
