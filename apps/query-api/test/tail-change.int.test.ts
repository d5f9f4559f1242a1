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
});
