// Snapshot consistency while a writer commits and compacts concurrently: every answer must come
// from exactly one table version. Each commit k sets every entity's total_cents to k and commits
// txn "w" = k, so an answer mixing versions would show min ≠ max, a count ≠ ENTITIES, or values
// that disagree with the offsets it reports.
import { type LakeTable } from '@sluice/lake';
import { KEY_HASH_COLUMN } from '@sluice/contracts';
import { type TestApp, createOrders, get, orderRow, query, startApp, tempDir } from './support';

const ENTITIES = 240;

function batch(k: number): Record<string, unknown>[] {
  return Array.from({ length: ENTITIES }, (_, i) => ({ ...orderRow(i, k), total_cents: k }));
}

const probe = {
  aggregates: [
    { fn: 'count', column: '*', as: 'n' },
    { fn: 'min', column: 'total_cents', as: 'lo' },
    { fn: 'max', column: 'total_cents', as: 'hi' },
    { fn: 'count_distinct', column: 'order_id', as: 'keys' },
  ],
};

interface ProbeAnswer {
  rows: { n: number; lo: number; hi: number; keys: number }[];
  freshness: { offsets: Record<string, number> };
}

async function readUntil(t: TestApp, done: () => boolean, check: (body: ProbeAnswer) => void): Promise<number> {
  let answers = 0;
  while (!done()) {
    const [all, one] = await Promise.all([
      query(t.app, 'silver_orders', probe),
      query(t.app, 'silver_orders', { ...probe, where: [{ column: 'bucket', op: '=', value: orderRow(7).bucket }] }),
    ]);
    expect(all.status).toBe(200);
    expect(one.status).toBe(200);
    check(all.body);
    const r = one.body.rows[0];
    expect(r.lo).toBe(r.hi); // one bucket, one version
    answers += 2;
  }
  return answers;
}

describe('snapshot consistency under concurrent commits and compaction', () => {
  let root: string;
  let t: TestApp;

  beforeAll(async () => {
    root = await tempDir('consistency');
  });
  afterEach(() => t?.close());

  it('copy-on-write MERGE + compaction: no answer mixes versions', async () => {
    const table: LakeTable = await createOrders(root, 'silver_orders');
    await table.merge({ source: { rows: batch(1) }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'w', version: 1 }] });
    t = await startApp(root, ['silver_orders'], { cacheEntries: 0 });
    let writing = true;
    const writer = (async () => {
      for (let k = 2; k <= 8; k++) {
        await table.merge({ source: { rows: batch(k) }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'w', version: k }], maxRowsPerFile: 40 });
        if (k % 3 === 0) await table.compact({ targetFileBytes: 64 * 1024 * 1024 });
      }
    })().finally(() => (writing = false));
    const seen = new Set<number>();
    const answers = await readUntil(t, () => !writing, (body) => {
      const r = body.rows[0];
      expect(r).toEqual({ n: ENTITIES, lo: r.hi, hi: r.hi, keys: ENTITIES });
      expect(r.hi).toBe(body.freshness.offsets.w);
      seen.add(r.hi);
    });
    await writer;
    expect(answers).toBeGreaterThan(4);
    expect(seen.size).toBeGreaterThan(1); // the readers really overlapped the writer
  });

  it('amortised MERGE (silver ⊕ tail, merge-on-read) + folds: current state, never behind its offsets', async () => {
    const table: LakeTable = await createOrders(root, 'silver_tail');
    const amortise = { foldFraction: 1.5 }; // fold a bucket after about two batches are pending
    await table.merge({ source: { rows: batch(1) }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'w', version: 1 }], amortise: { foldAll: true } });
    t = await startApp(root, ['silver_tail'], { cacheEntries: 0 });
    const q = (body: unknown) => query(t.app, 'silver_tail', body);
    let writing = true;
    const writer = (async () => {
      for (let k = 2; k <= 10; k++) {
        await table.merge({ source: { rows: batch(k) }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'w', version: k }], amortise });
      }
    })().finally(() => (writing = false));
    const seen = new Set<number>();
    let withTail = 0;
    while (writing) {
      const res = await q(probe);
      expect(res.status).toBe(200);
      const r = res.body.rows[0];
      // Every entity exactly once (the tail resolved against the table), all at one batch…
      expect(r).toEqual({ n: ENTITIES, lo: r.hi, hi: r.hi, keys: ENTITIES });
      // …and never older than the offsets the answer reports (read-your-writes holds).
      expect(r.hi).toBeGreaterThanOrEqual(res.body.freshness.offsets.w);
      if (res.body.freshness.pending) withTail++;
      seen.add(r.hi);
    }
    await writer;
    expect(seen.size).toBeGreaterThan(1);
    expect(withTail).toBeGreaterThan(0);

    const final = await q(probe);
    expect(final.body.rows[0]).toEqual({ n: ENTITIES, lo: 10, hi: 10, keys: ENTITIES });
    const entity = await query(t.app, 'silver_tail', { where: [{ column: 'order_id', op: '=', value: orderRow(3).order_id }], select: ['order_id', 'version', 'total_cents'] });
    expect(entity.body.rows).toEqual([{ order_id: orderRow(3).order_id, version: 10, total_cents: 10 }]);
  });

  it('with a tail, a stale pending row never shows through a filter on a non-key column', async () => {
    const table: LakeTable = await createOrders(root, 'silver_stale');
    const id = orderRow(42).order_id;
    // The table holds version 5 "shipped"; a late version 3 "paid" sits in the tail.
    await table.merge({ source: { rows: [orderRow(42, 5, 'shipped'), orderRow(43, 1, 'paid')] }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', amortise: { foldAll: true } });
    await table.merge({ source: { rows: [orderRow(42, 3, 'paid')] }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', amortise: { foldFraction: 100 } });
    t = await startApp(root, ['silver_stale'], { cacheEntries: 0 });
    const paid = await query(t.app, 'silver_stale', { where: [{ column: 'status', op: '=', value: 'paid' }], select: ['order_id', 'version'] });
    expect(paid.body.freshness.pending).not.toBeNull();
    expect(paid.body.rows).toEqual([{ order_id: orderRow(43).order_id, version: 1 }]);
    const one = await query(t.app, 'silver_stale', { where: [{ column: 'order_id', op: '=', value: id }], select: ['status', 'version'] });
    expect(one.body.rows).toEqual([{ status: 'shipped', version: 5 }]);
  });

  it('with a tail, an entity lookup pruned by bucket and key hash returns the tail\'s newer version and 404s a pending tombstone', async () => {
    const own = await tempDir('tail-lookup');
    const table: LakeTable = await createOrders(own, 'silver_orders');
    const merge = { keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', clusterColumn: KEY_HASH_COLUMN, maxRowsPerFile: 4 };
    // version 1 of 200 entities folded into the table, split into several key-hash ranges per bucket
    await table.merge({ ...merge, source: { rows: Array.from({ length: 200 }, (_, i) => orderRow(i, 1, 'created')) }, amortise: { foldAll: true } });
    // pending, not folded: a newer version of entity 7 and a tombstone for entity 8
    await table.merge({ ...merge, source: { rows: [orderRow(7, 2, 'paid'), { ...orderRow(8, 2), op: 'delete' }] }, amortise: { foldFraction: 100 } });
    const lookups = await startApp(own, ['silver_orders'], { cacheEntries: 0 });
    try {
      const newer = await get(lookups.app, `/v1/tables/silver_orders/entities/${orderRow(7).order_id}`);
      expect(newer.status).toBe(200);
      expect(newer.body.freshness.pending).not.toBeNull();
      expect(newer.body.entity).toMatchObject({ order_id: orderRow(7).order_id, version: 2, status: 'paid' });
      // the key hash pruned files of the bucket (more than one there) and the answer is still exact
      expect(newer.body.stats.filesRead).toBeLessThan((await table.snapshot()).files.filter((f) => f.partitionValues.bucket === String(orderRow(7).bucket)).length);
      const deleted = await get(lookups.app, `/v1/tables/silver_orders/entities/${orderRow(8).order_id}`);
      expect(deleted.status).toBe(404);
      const untouched = await get(lookups.app, `/v1/tables/silver_orders/entities/${orderRow(9).order_id}`);
      expect(untouched.body.entity).toMatchObject({ version: 1, status: 'created' });
    } finally {
      await lookups.close();
    }
  });
});
