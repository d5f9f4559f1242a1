import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { SluiceError } from '@sluice/errors';
import { LocalStorage } from '@sluice/lake';
import { build, type MergeApp } from '../src/app';
import { diffAgainstOracle, produce, readRows, caughtUp, orderSend, TestEnv, waitFor } from './support/harness';

/**
 * Local storage whose first commit of a tail DELETE fails without landing: with the amortised
 * MERGE, silver's commit (with its fold offsets) has landed by then, and the step still fails.
 */
class FailFirstTailDelete extends LocalStorage {
  static failed = 0;
  override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    if (FailFirstTailDelete.failed === 0 && /^_sluice_tail\/_delta_log\/\d+\.json$/.test(key) && Buffer.from(body).includes('"operation":"DELETE"')) {
      FailFirstTailDelete.failed += 1;
      throw new SluiceError('LAKE_STORAGE_FAILED', `${key}: injected failure of the tail's DELETE commit`);
    }
    return super.putIfAbsent(key, body);
  }
}

// Bug guarded: a silver step whose MERGE committed but whose tail clean-up then failed threw
// before it remembered the step's deletes. Silver's fold offsets had moved, so those deletes were
// never seen again by that process, and an older version arriving later re-inserted the entity.
describe('a delete folded by a step that failed after its silver commit', () => {
  const env = new TestEnv('tomb-tail', [CONTRACTS.orders]);
  let app: MergeApp | undefined;
  const t0 = Date.UTC(2026, 10, 29, 10, 0, 0);
  const order = (id: string, version: number, op: 'upsert' | 'delete', at: number) => orderSend(t0, id, version, op, at);

  beforeAll(() => env.createTopics());
  afterAll(async () => {
    await app?.stop();
    await env.close();
  });

  it('still holds back an older version of the deleted entity', async () => {
    app = await build({
      // Every step folds its whole tail (1 % of a tiny table), so each one commits a tail DELETE.
      config: env.config({ SLUICE_SILVER_FOLD_PERCENT: '1' }),
      logger: env.telemetry.logger,
      metrics: env.telemetry.metrics,
      metricsText: () => env.telemetry.metricsText(),
      storageFor: (name) => (/silver_/.test(name) ? new FailFirstTailDelete(path.join(env.lakeRoot, name)) : new LocalStorage(path.join(env.lakeRoot, name))),
    });
    await app.start();
    const first = [order('A', 1, 'upsert', 0), order('A', 3, 'delete', 2000), order('B', 1, 'upsert', 0)];
    await produce(env, first);
    await waitFor('the first events folded', async () => (await diffAgainstOracle(env, first)).length === 0, 60_000, 500);
    expect(FailFirstTailDelete.failed).toBe(1);
    const late = [order('A', 2, 'upsert', 1000)];
    await produce(env, late);
    await waitFor('the late version in bronze', async () => Number((await readRows(env, 'bronze_orders', 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0) === 4, 60_000, 500);
    await waitFor('the late version folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    expect(await diffAgainstOracle(env, [...first, ...late])).toEqual([]);
    const silver = await readRows(env, 'silver_orders', 'SELECT order_id FROM t ORDER BY order_id');
    expect(silver.map((r) => r.order_id)).toEqual(['B']);
  }, 180_000);
});
