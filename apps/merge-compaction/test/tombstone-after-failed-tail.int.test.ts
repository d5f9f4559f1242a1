import * as path from 'node:path';
import { CONTRACTS, bucketOf } from '@sluice/contracts';
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

  // Entities in silver buckets other than A's.
  const bucket = (id: string) => bucketOf(id, CONTRACTS.orders.buckets);
  const otherThanA = (n: number) => {
    const ids: string[] = [];
    for (let i = 0; ids.length < n; i++) if (bucket(`E${i}`) !== bucket('A')) ids.push(`E${i}`);
    return ids;
  };

  const bronzeRows = async () => Number((await readRows(env, 'bronze_orders', 'SELECT count(*) AS n FROM t'))[0]?.n ?? 0);

  it('still holds back an older version of the deleted entity', async () => {
    const [b, y, z] = otherThanA(3);
    app = await build({
      // The tail is kept under half of silver's rows: a step over that folds the buckets with the
      // highest pending share, and commits a tail DELETE when one of them has tail files.
      // Maintenance (which folds the whole tail) only at start, before silver exists.
      config: env.config({ SLUICE_SILVER_FOLD_PERCENT: '50', SLUICE_COMPACTION_INTERVAL_MS: '600000' }),
      logger: env.telemetry.logger,
      metrics: env.telemetry.metrics,
      metricsText: () => env.telemetry.metricsText(),
      storageFor: (name) => (/silver_/.test(name) ? new FailFirstTailDelete(path.join(env.lakeRoot, name)) : new LocalStorage(path.join(env.lakeRoot, name))),
    });
    await app.start();
    // Silver gets three rows (an empty table folds everything), then A's next version goes to the
    // tail (1 pending row, under half of 3).
    const seed = [order('A', 1, 'upsert', 0), order(y, 1, 'upsert', 0), order(z, 1, 'upsert', 0)];
    await produce(env, seed);
    await waitFor('the seed folded', async () => (await bronzeRows()) === 3 && (await caughtUp(env, CONTRACTS.orders)), 60_000, 300);
    const pendingInTail = [order('A', 2, 'upsert', 500)];
    await produce(env, pendingInTail);
    await waitFor('the update in the tail', async () => (await bronzeRows()) === 4 && (await caughtUp(env, CONTRACTS.orders)), 60_000, 300);
    expect(FailFirstTailDelete.failed).toBe(0);
    // A's bucket then holds 2 pending rows against 1 in silver (the highest share): this step folds
    // it with A's delete, while A's version 2 is pending in the tail, and the tail DELETE fails
    // after silver's commit.
    const first = [order('A', 4, 'delete', 2000), order(b, 1, 'upsert', 0)];
    await produce(env, first);
    const before = [...seed, ...pendingInTail, ...first];
    await waitFor('the first events folded', async () => (await diffAgainstOracle(env, before)).length === 0, 60_000, 500);
    expect(FailFirstTailDelete.failed).toBe(1);
    const late = [order('A', 3, 'upsert', 1000)];
    await produce(env, late);
    await waitFor('the late version in bronze', async () => (await bronzeRows()) === 7, 60_000, 500);
    await waitFor('the late version folded', () => caughtUp(env, CONTRACTS.orders), 60_000, 300);
    expect(await diffAgainstOracle(env, [...before, ...late])).toEqual([]);
    const silver = await readRows(env, 'silver_orders', 'SELECT order_id FROM t ORDER BY order_id');
    expect(silver.map((r) => r.order_id)).toEqual([b, y, z].sort());
  }, 180_000);
});
