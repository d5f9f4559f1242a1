import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage } from '@sluice/lake';
import { LakeAdapter } from '../src/lake/lake-adapter';

// A table whose amortised-merge tail was folded empty has a tail (a version) but no pending rows.
// Change detection counted from the tail's version 0 then, found its creation every time, and the
// tracker reloaded the table every 250 ms for nothing.
describe('change detection of a table with an emptied tail', () => {
  let dir: string;
  let engine: LakeQueryEngine;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'tail-change-'));
    engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir] });
  });

  afterAll(async () => {
    engine.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('finds no change while nothing is committed, and a change once the tail or the table moves', async () => {
    const storage = new LocalStorage(path.join(dir, 'silver_t'));
    const table = await LakeTable.create(storage, { columns: [{ name: 'key', type: 'long' }, { name: 'v', type: 'long' }] });
    await table.append({ rows: [{ key: 1, v: 1 }, { key: 2, v: 1 }] });
    const spec = { keys: ['key'], versionColumn: 'v' } as const;
    await table.merge({ ...spec, source: { rows: [{ key: 1, v: 2 }] }, amortise: { foldFraction: 10 } });
    await table.merge({ ...spec, source: { rows: [] }, amortise: { foldAll: true } });
    const view = await table.currentView();
    expect(view.pending).toBeUndefined();
    expect(view.tailVersion).toBeGreaterThan(0);

    const adapter = new LakeAdapter({ tables: ['silver_t'], storageFor: () => new LocalStorage(path.join(dir, 'silver_t')), engine });
    const loaded = await adapter.latest('silver_t');
    expect(await adapter.changedSince(loaded)).toBe(false);
    // A new batch lands in the tail: that is a change.
    await table.merge({ ...spec, source: { rows: [{ key: 2, v: 2 }] }, amortise: { foldFraction: 10 } });
    expect(await adapter.changedSince(loaded)).toBe(true);
  });

  // A table dropped and created again under its name with fewer versions never showed a next
  // commit, so query-api kept serving the dropped table (its files gone) until a restart.
  it('finds a change when the table was created again under its name, and serves the new one', async () => {
    const root = path.join(dir, 'silver_r');
    const old = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'key', type: 'long' }] });
    for (let i = 0; i < 3; i++) await old.append({ rows: [{ key: i }] });
    const adapter = new LakeAdapter({ tables: ['silver_r'], storageFor: () => new LocalStorage(root), engine });
    const loaded = await adapter.latest('silver_r');
    expect(loaded.version).toBe(3);
    expect(await adapter.changedSince(loaded)).toBe(false);
    await new Promise((r) => setTimeout(r, 20)); // the new table's files get later times
    await fs.rm(root, { recursive: true, force: true });
    const again = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'key', type: 'long' }] });
    await again.append({ rows: [{ key: 100 }] });
    expect(await adapter.changedSince(loaded)).toBe(true);
    const reloaded = await adapter.latest('silver_r');
    expect(reloaded.version).toBe(1);
    expect(reloaded.tableId).not.toBe(loaded.tableId);
    const rows = await adapter.query(reloaded, reloaded.files, [], { sql: 'SELECT sum(key)::INTEGER AS s FROM lake_snapshot', params: [], timeoutMs: 10_000 });
    expect(rows).toEqual([{ s: 100 }]);
  });

  // A past version was kept by table name and version only: after the table was created again,
  // asking for that version again served the dropped table's files and freshness.
  it('does not serve a kept past version of a table that was created again since', async () => {
    const root = path.join(dir, 'silver_p');
    const old = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'key', type: 'long' }] });
    await old.append({ rows: [{ key: 1 }] });
    const adapter = new LakeAdapter({ tables: ['silver_p'], storageFor: () => new LocalStorage(root), engine });
    const before = await adapter.atVersion('silver_p', 1);
    expect(await adapter.atVersion('silver_p', 1)).toBe(before); // kept while it is the table's
    await new Promise((r) => setTimeout(r, 20)); // the new table's files get later times
    await fs.rm(root, { recursive: true, force: true });
    const again = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'key', type: 'long' }] });
    await again.append({ rows: [{ key: 100 }] });
    const after = await adapter.atVersion('silver_p', 1);
    expect(after.tableId).not.toBe(before.tableId);
    const rows = await adapter.query(after, after.files, [], { sql: 'SELECT sum(key)::INTEGER AS s FROM lake_snapshot', params: [], timeoutMs: 10_000 });
    expect(rows).toEqual([{ s: 100 }]);
  });

  // Time travel reads a version without the tail, while an amortised MERGE commits its offsets to
  // the table when its rows only reached the tail: the answer claimed offsets of rows it lacked.
  it('reports no offsets for a past version of a table with a tail, and the offsets of one without', async () => {
    const spec = { keys: ['key'], versionColumn: 'v' } as const;
    const withTail = await LakeTable.create(new LocalStorage(path.join(dir, 'silver_tt')), { columns: [{ name: 'key', type: 'long' }, { name: 'v', type: 'long' }] });
    await withTail.append({ rows: [{ key: 1, v: 1 }, { key: 2, v: 1 }] });
    await withTail.merge({ ...spec, source: { rows: [{ key: 3, v: 1 }] }, txns: [{ appId: 'fold:t-0', version: 5 }], amortise: { foldFraction: 10 } });
    const plain = await LakeTable.create(new LocalStorage(path.join(dir, 'silver_pl')), { columns: [{ name: 'key', type: 'long' }, { name: 'v', type: 'long' }] });
    await plain.merge({ ...spec, source: { rows: [{ key: 3, v: 1 }] }, txns: [{ appId: 'fold:t-0', version: 5 }] });
    const adapter = new LakeAdapter({ tables: ['silver_tt', 'silver_pl'], storageFor: (t) => new LocalStorage(path.join(dir, t)), engine });

    const latest = await adapter.latest('silver_tt');
    expect(latest.txns).toEqual({ 'fold:t-0': 5 });
    const past = await adapter.atVersion('silver_tt', latest.version);
    const rows = await adapter.query(past, past.files, [], { sql: 'SELECT count(*)::INTEGER AS n FROM lake_snapshot', params: [], timeoutMs: 10_000 });
    expect(rows).toEqual([{ n: 2 }]); // key 3 is in the tail only
    expect(past.txns).toEqual({});
    expect(past.tailExcluded).toBe(true);

    const plainPast = await adapter.atVersion('silver_pl', (await adapter.latest('silver_pl')).version);
    expect(plainPast.txns).toEqual({ 'fold:t-0': 5 });
    expect(plainPast.tailExcluded).toBeUndefined();
  });
});
