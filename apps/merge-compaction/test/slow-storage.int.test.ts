import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { LocalStorage } from '@sluice/lake';
import { build, type MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { FlakyStorage } from './support/flaky-storage';
import { diffAgainstOracle, ORACLE_SPECS, produce, streamOptions, TestEnv, waitFor } from './support/harness';

// Storage made slow, then failing, while the stream runs: tier 1 pauses its partitions and keeps
// its buffer under the bound (lag grows instead), retries with backoff without dying, then
// catches up; the oracle holds at the end.
describe('merge-compaction under slow and failing storage', () => {
  const env = new TestEnv('slow', [CONTRACTS.clickstream, CONTRACTS.orders]);
  const sends = generateStream([ORACLE_SPECS.clickstream, ORACLE_SPECS.orders], streamOptions(51, 1500));
  const maxBufferedBytes = 96 * 1024;
  let app: MergeApp | undefined;

  beforeAll(() => env.createTopics());

  afterAll(async () => {
    FlakyStorage.failing = false;
    FlakyStorage.latencyMs = 0;
    await app?.stop();
    await env.close();
  });

  it('pauses with bounded memory, retries, resumes and catches up', async () => {
    app = await build({
      config: env.config({
        SLUICE_MAX_BUFFERED_BYTES: String(maxBufferedBytes),
        SLUICE_BATCH_MAX_BYTES: String(32 * 1024),
        SLUICE_BATCH_MAX_MS: '200',
        SLUICE_RETRY_MAX_MS: '800',
      }),
      logger: env.telemetry.logger,
      metrics: env.telemetry.metrics,
      metricsText: () => env.telemetry.metricsText(),
      storageFor: (name) => new FlakyStorage(new LocalStorage(path.join(env.lakeRoot, name))),
    });
    await app.start();
    const tier1 = app.tier1!;
    await produce(env, sends.slice(0, 300));
    await waitFor('first commits', () => tier1.stats.commits > 0, 60_000);

    // Slow: every storage call takes 150 ms.
    FlakyStorage.latencyMs = 150;
    const rest = produce(env, sends.slice(300), { chunk: 400, pauseMs: 100 });
    await new Promise((r) => setTimeout(r, 2500));
    // Failing: writes throw retryable errors for a while.
    FlakyStorage.failing = true;
    await waitFor('storage failures to be seen and retried', () => tier1.stats.storageFailures >= 3, 60_000);
    const metrics = await env.telemetry.metricsText();
    expect(metrics).toMatch(/sluice_merge_compaction_paused_partitions_partitions\{topic="[^"]+"\} [1-9]/);
    // Not committing with events waiting: what tells a stuck table from an idle one (alert
    // SluiceTableNotCommitting). The records it holds count even when the consumer's lag is 0.
    expect(waiting(metrics).filter(([table, n]) => /bronze_/.test(table) && n > 0)).not.toEqual([]);
    expect(tier1.live).toBe(true);
    await rest;
    await new Promise((r) => setTimeout(r, 1500));
    FlakyStorage.failing = false;
    FlakyStorage.latencyMs = 0;

    let problems: string[] = [];
    await waitFor('tables to equal the oracle after recovery', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 90_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    // Caught up: nothing waits for any table (tier 1 reports once a second, each fold step after it commits).
    await waitFor('no table to have events waiting', async () => waiting(await env.telemetry.metricsText()).every(([, n]) => n === 0), 30_000, 500);
    const tables = waiting(await env.telemetry.metricsText()).map(([table]) => table.replace(/^.*?(bronze|silver|gold)_/, '$1_')).sort();
    expect(tables).toEqual(['bronze_clickstream', 'bronze_orders', 'gold_clickstream_user_minute', 'gold_orders_status_minute', 'silver_clickstream', 'silver_orders']);
    // Memory stayed bounded: what tier 1 held never passed the bound by more than one poll's worth.
    expect(tier1.stats.maxBufferedBytes).toBeLessThan(maxBufferedBytes + 64 * 1024);
    expect(tier1.stats.storageFailures).toBeGreaterThanOrEqual(3);
    expect(tier1.live).toBe(true);
  }, 240_000); // above two 60 s waits, the sleeps and the 90 s final wait
});

/** The `table_waiting_offsets` series of a metrics exposition: [table, value]. */
function waiting(metrics: string): [string, number][] {
  return [...metrics.matchAll(/^sluice_merge_compaction_table_waiting_offsets\{table="([^"]+)"\} (\S+)$/gm)].map((m) => [m[1], Number(m[2])]);
}
