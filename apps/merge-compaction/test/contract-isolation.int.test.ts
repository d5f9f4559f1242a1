import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { LocalStorage } from '@sluice/lake';
import { build, type MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { FlakyStorage } from './support/flaky-storage';
import { diffAgainstOracle, ORACLE_SPECS, produce, streamOptions, TestEnv, waitFor } from './support/harness';

// One contract's bronze table refusing writes (its storage prefix, a bucket count changed under
// it) stopped every contract the process served: the closed batch was retried whole and the next
// one never closed. Now that contract alone backs off (its partitions sought back to bronze's
// offsets, paused, read again at each retry); the other keeps reaching bronze, silver and gold,
// and once the table takes writes again the oracle holds.
describe('merge-compaction with one contract\'s bronze failing', () => {
  const env = new TestEnv('isolation', [CONTRACTS.clickstream, CONTRACTS.orders]);
  const sends = generateStream([ORACLE_SPECS.clickstream, ORACLE_SPECS.orders], streamOptions(52, 800));
  let app: MergeApp | undefined;

  beforeAll(() => env.createTopics());

  afterAll(async () => {
    FlakyStorage.failingUri = undefined;
    await app?.stop();
    await env.close();
  });

  it('keeps the other contract flowing, then catches up the failing one exactly', async () => {
    app = await build({
      config: env.config({ SLUICE_BATCH_MAX_MS: '200', SLUICE_RETRY_MAX_MS: '800' }),
      logger: env.telemetry.logger,
      metrics: env.telemetry.metrics,
      metricsText: () => env.telemetry.metricsText(),
      storageFor: (name) => new FlakyStorage(new LocalStorage(path.join(env.lakeRoot, name))),
    });
    FlakyStorage.failures = 0;
    FlakyStorage.failingUri = new RegExp(`${CONTRACTS.orders.tables.bronze}$`);
    await app.start();
    const tier1 = app.tier1!;
    // Half the stream, then the rest once orders' appends have failed: those later clickstream
    // events must reach bronze through batches closed while orders backs off.
    const half = Math.floor(sends.length / 2);
    await produce(env, sends.slice(0, half));
    await waitFor("orders' appends to fail", () => tier1.stats.storageFailures >= 2, 60_000);
    await produce(env, sends.slice(half));

    // Clickstream: bronze, silver and gold equal the oracle while orders' bronze refuses writes.
    const clickstream = sends.filter((s) => s.contract === 'clickstream');
    let problems: string[] = [];
    await waitFor(
      'clickstream to equal the oracle while orders fails',
      async () => (problems = (await diffAgainstOracle(env, sends)).filter((p) => p.includes('clickstream'))).length === 0,
      90_000,
      1000,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    expect(clickstream.length).toBeGreaterThan(0);
    // Orders' partitions pause during each back-off (and are read again after it); clickstream's never.
    const pausedOf = (metrics: string, name: string) => Number(new RegExp(`sluice_merge_compaction_paused_partitions_partitions\\{topic="[^"]*${name}[^"]*"\\} (\\S+)`).exec(metrics)?.[1] ?? NaN);
    await waitFor('orders paused in a back-off, clickstream flowing', async () => {
      const metrics = await env.telemetry.metricsText();
      return pausedOf(metrics, 'orders') > 0 && pausedOf(metrics, 'clickstream') === 0;
    }, 30_000, 50);
    expect(tier1.live).toBe(true);

    // Orders' table takes writes again: everything equals the oracle, nothing lost or doubled.
    FlakyStorage.failingUri = undefined;
    await waitFor('all tables to equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 90_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    expect(FlakyStorage.failures).toBeGreaterThanOrEqual(3);
  }, 240_000);
});
