import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { build, type MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { diffAgainstOracle, ORACLE_SPECS, produce, streamOptions, TestEnv, waitFor } from './support/harness';

// merge-compaction with its lake root on a real S3-compatible server (SeaweedFS from
// tools/services.d/10-s3.sh), configured the way deploy/ configures it: SLUICE_LAKE_ROOT=s3://…
// and the SLUICE_S3_* settings. Bug: the service read SLUICE_LAKE_ROOT as a directory, so in a
// pod it wrote a local directory named "s3:" and query-api, reading S3, saw nothing.
describe('merge-compaction on an S3 lake root', () => {
  const env = new TestEnv('s3', [CONTRACTS.orders, CONTRACTS.clickstream], { s3: true });
  const sends = generateStream([ORACLE_SPECS.orders, ORACLE_SPECS.clickstream], streamOptions(23, 300));
  let app: MergeApp | undefined;

  beforeAll(async () => {
    await env.createTopics();
  });

  afterAll(async () => {
    await app?.stop();
    await env.close();
  });

  it('writes bronze, silver and gold to S3 and they equal the oracle', async () => {
    expect(env.lakeRoot).toMatch(/^s3:\/\//);
    app = await build({ config: env.config(), logger: env.telemetry.logger, metrics: env.telemetry.metrics, metricsText: () => env.telemetry.metricsText() });
    await app.start();
    await produce(env, sends, { transactional: true, txnSize: 100, abortEvery: 4 });

    let problems: string[] = [];
    await waitFor('S3 tables to equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 120_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    // The tables were read back through a separate S3 client: they are objects in the bucket,
    // and nothing was written to a local path named after the root.
    expect(existsSync(path.resolve('s3:'))).toBe(false);
    for (const name of [CONTRACTS.orders.tables.bronze, CONTRACTS.orders.tables.silver, CONTRACTS.clickstream.aggregates[0].table]) {
      const storage = env.storage(name);
      expect(storage.uri).toMatch(/^s3:\/\//);
      const keys = (await storage.list('')).map((o) => o.key);
      expect({ name, log: keys.some((k) => k.startsWith('_delta_log/')), data: keys.some((k) => k.endsWith('.parquet')) }).toEqual({ name, log: true, data: true });
    }
  }, 180_000); // above the 120 s wait, so the wait fails first and prints its problems
});
