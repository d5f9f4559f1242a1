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

  it('rebuilds its tombstones and folds a late window into gold in reads the cache can hold', async () => {
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

// A tier-2 step takes at most SLUICE_MERGE_MAX_ROWS offsets; on S3 its bronze read must also fit
// the file cache, or the step fails on every retry. A backlog of large events passes the cache
// long before it passes the row bound.
describe('tier 2 on S3 catching up on a backlog larger than its file cache', () => {
  const env = new TestEnv('s3-steps', [CONTRACTS.orders], { s3: true });
  const apps: MergeApp[] = [];
  const t0 = Date.UTC(2026, 10, 29, 12, 0, 0);
  const order = (id: string, version: number, at: number) => orderSend(t0, id, version, 'upsert', at, randomBytes(150).toString('base64'));
  const bronzeRows = async () => Number((await readRows(env, CONTRACTS.orders.tables.bronze, 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env.close();
  });

  it('folds the backlog into silver and gold in steps whose reads fit the cache', async () => {
    // Tier 1 alone lands the whole backlog in bronze, in many files.
    const tier1 = await startApp(env, apps, { SLUICE_ROLES: 'tier1', SLUICE_BATCH_MAX_EVENTS: '1000' });
    const sends = Array.from({ length: 15_000 }, (_, i) => order(`o${i % 500}`, Math.floor(i / 500) + 1, i * 10));
    await produce(env, sends);
    await waitFor('the backlog in bronze', async () => (await bronzeRows()) === sends.length, 120_000, 500);
    await tier1.stop();
    const bronze = await env.table(CONTRACTS.orders.tables.bronze);
    expect((await bronze!.snapshot()).files.reduce((n, f) => n + f.size, 0)).toBeGreaterThan(2 * 1024 * 1024);

    // Tier 2 with the smallest cache (1 MiB; reads may pin up to 2 MiB): far below the backlog.
    await startApp(env, apps, { SLUICE_ROLES: 'tier2', SLUICE_S3_CACHE_BYTES_PER_TABLE: String(1024 * 1024) });
    let problems: string[] = [];
    await waitFor('silver and gold equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 180_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
  }, 420_000);
});
