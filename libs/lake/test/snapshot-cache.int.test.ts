import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeTable, LocalStorage, type Snapshot } from '../src';
import { KEY_V_BUCKET, commitFile, keyRows, tempDir } from './helpers';

// A LakeTable keeps the newest snapshot it loaded and later reads only the commits after it.
// Whatever it builds that way must equal a full replay by a reader that never saw the table.
const columns = KEY_V_BUCKET;
const rows = keyRows;

/** What a snapshot says about the table, in a comparable form. */
function state(s: Snapshot) {
  return {
    version: s.version,
    timestampMs: s.timestampMs,
    schema: s.schema,
    configuration: s.configuration,
    files: s.files.map((f) => ({ path: f.path, size: f.size, partitionValues: f.partitionValues, stats: f.add.stats })),
    tombstones: s.tombstones.map((t) => t.path).sort(),
    txns: s.txnVersions(),
  };
}

describe('incremental snapshots', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-snapshot-cache');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('equal a full replay after appends, merges, compaction, a new column, checkpoints and another writer', async () => {
    const root = path.join(dir, 'a');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'], properties: { 'delta.checkpointInterval': '3' } });
    const other = await LakeTable.open(new LocalStorage(root));
    const compareWithFullReplay = async () => {
      const cached = await table.snapshot();
      const full = await (await LakeTable.open(new LocalStorage(root))).snapshot();
      expect(state(cached)).toEqual(state(full));
      return cached;
    };
    await table.append({ rows: rows(0, 10) }, { txns: [{ appId: 'w', version: 1 }] });
    const first = await compareWithFullReplay();
    expect(await table.snapshot()).toBe(first); // nothing new: the same snapshot, nothing read
    await other.append({ rows: rows(10, 20) }, { txns: [{ appId: 'w', version: 2 }] }); // a commit this handle did not make
    await table.merge({ source: { rows: rows(5, 15, 2) }, keys: ['key'], versionColumn: 'v' });
    await compareWithFullReplay();
    await other.addColumns([{ name: 'note', type: 'string' }]);
    await table.append({ rows: rows(20, 30).map((r) => ({ ...r, note: 'n' })) });
    expect((await compareWithFullReplay()).schema.fields.map((f) => f.name)).toEqual(['key', 'v', 'bucket', 'note']);
    expect((await table.compact()).filesRemoved).toBeGreaterThan(2);
    await other.checkpoint();
    await table.append({ rows: rows(30, 31) }, { txns: [{ appId: 'x', version: 7 }] });
    const last = await compareWithFullReplay();
    expect(last.txnVersions()).toEqual(new Map([['w', 2n], ['x', 7n]]));
    expect(first.version).toBeLessThan(last.version);
    expect(state(first).files.length).toBe(2); // earlier snapshots stay as they were
  });

  it('falls back to a full replay when the commits after its snapshot are gone (log cleanup ran past it)', async () => {
    const root = path.join(dir, 'b');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await table.append({ rows: rows(0, 4) });
    expect((await table.snapshot()).version).toBe(1);
    const other = await LakeTable.open(new LocalStorage(root));
    for (let i = 0; i < 4; i++) await other.append({ rows: rows(10 * i + 10, 10 * i + 14) });
    await other.checkpoint(); // at version 5
    await fs.rm(commitFile(root, 2)); // as cleanup does for commits a checkpoint covers
    await fs.rm(commitFile(root, 3));
    const snap = await table.snapshot();
    expect(snap.version).toBe(5);
    expect(state(snap)).toEqual(state(await (await LakeTable.open(new LocalStorage(root))).snapshot()));
    expect(snap.files.length).toBe(5 * 2);
  });
});
