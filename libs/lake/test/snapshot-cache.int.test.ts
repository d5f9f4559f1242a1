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

  // Log cleanup that removed a whole block of 1000 versions past a handle's snapshot left nothing
  // to list after it: the handle took its old snapshot for the latest, committed at the next
  // version (deleted by the cleanup, so the put-if-absent succeeded) where no reader looks, and
  // lost that commit without an error.
  it('reloads in full when cleanup removed every commit from its snapshot to past the next block', async () => {
    const root = path.join(dir, 'c');
    const idle = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'], properties: { 'delta.checkpointInterval': '100000' } });
    expect((await idle.snapshot()).version).toBe(0);
    // Another writer takes the table past version 1000 (txn-only commits, written as it would).
    const other = await LakeTable.open(new LocalStorage(root));
    await other.append({ rows: rows(0, 4) }, { txns: [{ appId: 'w', version: 1 }] });
    const template = await fs.readFile(commitFile(root, 1), 'utf8');
    const txnOnly = template.split('\n').filter((l) => l.includes('"commitInfo"') || l.includes('"txn"')).join('\n') + '\n';
    for (let v = 2; v <= 1002; v++) await fs.writeFile(commitFile(root, v), txnOnly.replace('"version":1', `"version":${v}`));
    await other.checkpoint(); // at 1002
    expect((await other.cleanupLog({ retentionMs: 0, nowMs: Date.now() + 60_000 })).filesDeleted).toBeGreaterThanOrEqual(1002);
    // The idle handle writes: its commit must land after 1002 and be seen by a new reader.
    const written = await idle.append({ rows: rows(100, 102) }, { txns: [{ appId: 'idle', version: 5 }] });
    expect(written.version).toBe(1003);
    const fresh = await (await LakeTable.open(new LocalStorage(root))).snapshot();
    expect(fresh.version).toBe(1003);
    expect(fresh.txnVersions().get('idle')).toBe(5n);
    expect(fresh.files.length).toBe(2 + 2); // the first append's two buckets, and this one's
  });

  // A long-lived handle kept every tombstone it ever saw: only checkpoints dropped the expired
  // ones, and its incremental snapshots never read a checkpoint again (memory and load time grew).
  it('drops tombstones past the retention as its snapshot moves on, as a full load from a checkpoint does', async () => {
    const root = path.join(dir, 'd');
    const table = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'], properties: { 'delta.deletedFileRetentionDuration': 'interval 1 second' } });
    for (let i = 0; i < 3; i++) await table.append({ rows: rows(10 * i, 10 * i + 4) });
    await table.compact();
    expect((await table.snapshot()).tombstones.length).toBe(6);
    await new Promise((r) => setTimeout(r, 1_100));
    await table.append({ rows: rows(100, 102) });
    const snap = await table.snapshot();
    expect(snap.tombstones).toEqual([]);
    await table.checkpoint();
    expect(state(snap)).toEqual(state(await (await LakeTable.open(new LocalStorage(root))).snapshot()));
  });

  // A handle that outlived its table (dropped and created again at the same place, with at least
  // as many versions) patched its old snapshot with the new table's commits: two tables mixed.
  it('reloads in full when its table was created again at the same place', async () => {
    const root = path.join(dir, 'e');
    const old = await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    await old.append({ rows: rows(0, 4) });
    expect((await old.snapshot()).version).toBe(1);
    await new Promise((r) => setTimeout(r, 20)); // the new table's files get later times
    await fs.rm(root, { recursive: true, force: true });
    const again = await LakeTable.create(new LocalStorage(root), { columns: [...columns, { name: 'note', type: 'string' }], partitionColumns: ['bucket'] });
    for (let i = 0; i < 3; i++) await again.append({ rows: rows(100 + i, 101 + i) });
    const seen = await old.snapshot();
    expect(state(seen)).toEqual(state(await (await LakeTable.open(new LocalStorage(root))).snapshot()));
    expect(seen.schema.fields.map((f) => f.name)).toContain('note');
    // Created once more, at fewer versions than the handle's latest: adopted as its latest (kept
    // the old one, every later load was a full one until the new table passed version 3).
    await new Promise((r) => setTimeout(r, 20));
    await fs.rm(root, { recursive: true, force: true });
    await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'] });
    const smaller = await old.snapshot();
    expect(smaller.version).toBe(0);
    expect(await old.snapshot()).toBe(smaller); // nothing new since: the same snapshot, no reload
  });
});

