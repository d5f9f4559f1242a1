import { CONTRACTS } from '@sluice/contracts';
import { build, type MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { diffAgainstOracle, ORACLE_SPECS, produce, readRows, streamOptions, TestEnv, waitFor } from './support/harness';

// The oracle test: a generated stream with duplicates, out-of-order versions, tombstones, a
// schema change (orders v1 → v2) and three contracts, produced as validate writes it (Avro,
// half plain, half in transactions with aborted ones); after the pipeline drains, bronze holds
// each event once, silver equals the oracle's fold by version and gold the oracle's aggregates.
describe('merge-compaction oracle', () => {
  const env = new TestEnv('oracle', [CONTRACTS.orders, CONTRACTS.clickstream, CONTRACTS.inventory]);
  const sends = generateStream([ORACLE_SPECS.orders, ORACLE_SPECS.clickstream, ORACLE_SPECS.inventory], streamOptions(11, 700));
  let app: MergeApp | undefined;

  beforeAll(async () => {
    await env.createTopics();
  });

  afterAll(async () => {
    await app?.stop();
    await env.close();
  });

  it('drains to bronze once, silver by version and gold aggregates', async () => {
    const config = env.config({ SLUICE_SILVER_FOLD_PERCENT: '20' });
    app = await build({ config, logger: env.telemetry.logger, metrics: env.telemetry.metrics, metricsText: () => env.telemetry.metricsText() });
    await app.start();
    const half = Math.floor(sends.length / 2);
    await produce(env, sends.slice(0, half), { chunk: 150, pauseMs: 50 });
    await produce(env, sends.slice(half), { transactional: true, txnSize: 120, abortEvery: 3 });

    let problems: string[] = [];
    await waitFor('tables to equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 90_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });

    // The aborted garbage was never decoded (read_committed hid it).
    expect(app.tier1!.stats.undecodable).toBe(0);
    expect(app.tier1!.stats.duplicates).toBeGreaterThan(0);
    // Schema evolution without restart: v2's coupon_code became a column and carries values.
    const coupons = await readRows(env, CONTRACTS.orders.tables.bronze, 'SELECT count(coupon_code) AS n FROM t');
    expect(Number(coupons[0].n)).toBeGreaterThan(0);

    // Ops endpoints.
    const base = `http://127.0.0.1:${app.opsPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/sluice_merge_compaction_events_out_total\{outcome="duplicate"\}/);

    await app.stop();
    expect((await fetch(`${base}/readyz`).catch(() => ({ status: 0 }))).status).not.toBe(200);
  });
});
