import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeTable, LocalStorage, stringifyJson, type ListOptions, type StoredObject } from '../src';
import { listLogToCutoff } from '../src/log/log-reader';
import { commitFile, tempDir } from './helpers';

/** A local table directory whose listings are counted: the keys each `list` returned. */
class CountingStorage extends LocalStorage {
  listed = 0;
  override async list(prefix: string, options?: ListOptions): Promise<StoredObject[]> {
    const found = await super.list(prefix, options);
    this.listed += found.length;
    return found;
  }
}

// A past version (or a time) read the whole log: a month of streaming commits is millions of
// keys, listed for every time-travel read. It now lists from the checkpoint at or below it.
describe('time travel lists the log around its target, not the whole log', () => {
  const COMMITS = 2_600;
  const BASE_MS = Date.UTC(2026, 0, 1);
  /** Commit v's time: one a second. */
  const at = (v: number) => BASE_MS + v * 1000;
  let dir: string;
  let root: string;

  beforeAll(async () => {
    dir = await tempDir('lake-time-travel');
    root = path.join(dir, 't');
    const storage = new LocalStorage(root);
    const table = await LakeTable.create(storage, { columns: [{ name: 'id', type: 'long' }] });
    // Written directly (one add per commit, as a streaming writer's), a checkpoint every 300.
    for (let v = 1; v <= COMMITS; v++) {
      const lines = [
        { commitInfo: { timestamp: at(v), operation: 'WRITE', isBlindAppend: true } },
        { add: { path: `part-${v}.parquet`, partitionValues: {}, size: 1000, modificationTime: at(v), dataChange: true, stats: stringifyJson({ numRecords: 1 }) } },
      ];
      if (!(await storage.putIfAbsent(`_delta_log/${String(v).padStart(20, '0')}.json`, Buffer.from(lines.map((l) => stringifyJson(l)).join('\n') + '\n')))) throw new Error(`version ${v} exists`);
      if (v % 300 === 0) await table.checkpoint(v);
    }
    for (let v = 0; v <= COMMITS; v++) await fs.utimes(commitFile(root, v), at(v) / 1000, at(v) / 1000);
    // One commit written later than the next (clocks do that): times are forced to increase, so
    // 2,000 reads as 2 ms after 1,999's mtime, 3 ms after its own.
    await fs.utimes(commitFile(root, 1_999), (at(2_000) + 2) / 1000, (at(2_000) + 2) / 1000);
  }, 120_000);
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function load(target: { version?: number; timestampMs?: number }) {
    const storage = new CountingStorage(root);
    const table = await LakeTable.open(storage); // loads the latest version
    storage.listed = 0;
    const snapshot = await table.snapshot(target);
    return { version: snapshot.version, files: snapshot.files.length, listed: storage.listed };
  }

  it('a version below the newest checkpoint: its block of 1000 versions only', async () => {
    // The whole log is 2,601 commits and 8 checkpoints; block 0 holds 1,000 commits and 3
    // checkpoints, block 1 the same, block 2 601 commits and 2 checkpoints (2,100 and 2,400).
    expect(await load({ version: 150 })).toEqual({ version: 150, files: 150, listed: 1_003 });
    expect(await load({ version: 2_150 })).toEqual({ version: 2_150, files: 2_150, listed: 603 });
    // Its block holds no checkpoint at or below it: the block below too.
    expect(await load({ version: 2_050 })).toEqual({ version: 2_050, files: 2_050, listed: 1_606 });
    // At or above the newest checkpoint (2,400): from it on, its checkpoint and commits 2,400 to
    // 2,600 (its whole block, 603 keys, before listings started at the version).
    expect(await load({ version: 2_500 })).toEqual({ version: 2_500, files: 2_500, listed: 202 });
  });

  it('a time: from the newest checkpoint down to the commit at or before it, and a block more', async () => {
    expect(await load({ timestampMs: at(2_345) + 500 })).toEqual({ version: 2_345, files: 2_345, listed: 1_606 });
    expect(await load({ timestampMs: at(1_734) })).toEqual({ version: 1_734, files: 1_734, listed: 2_609 });
    // The block below is what shows 2,000's time forced past its mtime: as the whole log reads.
    expect(await load({ timestampMs: at(2_000) + 1 })).toMatchObject({ version: 1_998 });
    expect(await load({ timestampMs: at(COMMITS) + 60_000 })).toMatchObject({ version: COMMITS, files: COMMITS });
    await expect(load({ timestampMs: at(0) - 1 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
  });

  it('a version past the newest is not found', async () => {
    await expect(load({ version: 5_000 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
  });

  // Refusing to create a table where one exists listed the whole log (2,610 keys here).
  it('creating a table where one exists looks at the log\'s first keys only', async () => {
    const storage = new CountingStorage(root);
    await expect(LakeTable.create(storage, { columns: [{ name: 'id', type: 'long' }] })).rejects.toMatchObject({ code: 'LAKE_TABLE_EXISTS' });
    expect(storage.listed).toBe(10);

    // A log whose first keys are all something else (here checksum files below its first commit)
    // is listed whole before it is taken for no table.
    const odd = path.join(dir, 'odd-start');
    await fs.mkdir(path.join(odd, '_delta_log'), { recursive: true });
    for (let v = 0; v < 12; v++) await fs.writeFile(path.join(odd, '_delta_log', `${String(v).padStart(20, '0')}.crc`), '{}');
    await fs.writeFile(path.join(odd, '_delta_log', `${String(12).padStart(20, '0')}.checkpoint.parquet`), 'PAR1');
    const oddStorage = new CountingStorage(odd);
    await expect(LakeTable.create(oddStorage, { columns: [{ name: 'id', type: 'long' }] })).rejects.toMatchObject({ code: 'LAKE_TABLE_EXISTS' });
    expect(oddStorage.listed).toBe(10 + 13);
    // Only checksum files: no table, so it is created.
    await fs.rm(path.join(odd, '_delta_log', `${String(12).padStart(20, '0')}.checkpoint.parquet`));
    const created = await LakeTable.create(new LocalStorage(odd), { columns: [{ name: 'id', type: 'long' }] });
    expect((await created.snapshot()).version).toBe(0);
  });

  // A writer refreshes its snapshot before every commit, and a reader on its cadence: each refresh
  // listed the whole block of the latest version (up to 1,000 commits and their checkpoints, a stat
  // of each on local disk), 27 ms of CPU per tier-1 commit at 2,000 rows.
  it('a refresh lists the log from the version it has on, not its whole block', async () => {
    const storage = new CountingStorage(path.join(dir, 'refresh'));
    const table = await LakeTable.create(storage, { columns: [{ name: 'id', type: 'long' }] });
    for (let i = 0; i < 40; i++) await table.append({ rows: [{ id: i }] });
    const other = await LakeTable.open(new LocalStorage(path.join(dir, 'refresh')));
    await other.append({ rows: [{ id: 40 }] });
    storage.listed = 0;
    const snapshot = await table.snapshot();
    expect(snapshot.version).toBe(41);
    expect(snapshot.files).toHaveLength(41);
    // From the version the handle last read (39) on: 39 (to tell the same table from one created
    // again), 40 and its checkpoint, 41. The whole block was 46 keys.
    expect(storage.listed).toBe(4);
  });

  it('a table without a checkpoint yet: a version past its newest is not found, not "no table"', async () => {
    const young = await LakeTable.create(new LocalStorage(path.join(dir, 'young')), { columns: [{ name: 'id', type: 'long' }] });
    for (let i = 0; i < 4; i++) await young.append({ rows: [{ id: i }] });
    const reopened = await LakeTable.open(new LocalStorage(path.join(dir, 'young')));
    expect((await reopened.snapshot({ version: 3 })).files).toHaveLength(3);
    await expect(reopened.snapshot({ version: 1_000 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
  });

  it('an unreadable checkpoint: the replay lists the blocks below it only as far as the checkpoint before it', async () => {
    const file = (v: number) => path.join(root, '_delta_log', `${String(v).padStart(20, '0')}.checkpoint.parquet`);
    const saved = new Map<number, Buffer>();
    for (const v of [2_400, 2_100]) saved.set(v, await fs.readFile(file(v)));
    const latest = async () => {
      const storage = new CountingStorage(root);
      const table = await LakeTable.open(storage); // loads the latest version
      const listed = storage.listed;
      const snapshot = await table.snapshot();
      return { version: snapshot.version, files: snapshot.files.length, listed };
    };
    try {
      await fs.writeFile(file(2_400), 'PAR1 torn');
      // From 2,400 on (202 keys), then its block whole, which holds 2,100 (603): no block below.
      expect(await latest()).toEqual({ version: COMMITS, files: COMMITS, listed: 202 + 603 });
      await fs.writeFile(file(2_100), 'PAR1 torn');
      // Block 1 holds 1,800: listed, block 0 not (the whole log was listed before: 2,609 keys).
      expect(await latest()).toEqual({ version: COMMITS, files: COMMITS, listed: 202 + 603 + 1_003 });
    } finally {
      for (const [v, body] of saved) await fs.writeFile(file(v), body);
    }
  });

  // Log cleanup listed the whole log, with a stat or an S3 list page per thousand keys, every
  // 100 commits and inside a data commit: at one commit a second, 2.6M keys for a month's log.
  it('log cleanup lists from the oldest block up to the first block newer than its cutoff', async () => {
    const copy = path.join(dir, 'cleanup');
    await fs.cp(root, copy, { recursive: true, preserveTimestamps: true });
    for (let v = 300; v <= COMMITS; v += 300) {
      const cp = path.join(copy, '_delta_log', `${String(v).padStart(20, '0')}.checkpoint.parquet`);
      await fs.utimes(cp, at(v) / 1000, at(v) / 1000);
    }
    const storage = new CountingStorage(copy);
    const table = await LakeTable.open(storage);
    const logKeys = async () => (await fs.readdir(path.join(copy, '_delta_log'))).filter((f) => /^\d{20}\./.test(f)).sort();
    // Each cleanup first reloads the latest snapshot (not counted: a reload measured alone first).
    const cleanup = async (cutoffVersion: number) => {
      await table.snapshot();
      storage.listed = 0;
      await table.snapshot();
      const reload = storage.listed;
      storage.listed = 0;
      const { filesDeleted } = await table.cleanupLog({ retentionMs: 0, nowMs: at(cutoffVersion) });
      return { filesDeleted, listed: storage.listed - reload };
    };

    // Bounded by keys as well (cleanup runs inside a data commit): whole blocks up to the bound.
    expect(await listLogToCutoff(storage, at(2_450), COMMITS, 1)).toHaveLength(1_003);
    expect(await listLogToCutoff(storage, at(2_450), COMMITS, 1_004)).toHaveLength(1_003 + 1_003);

    // Checkpoint 300 is the newest older than the cutoff: commits 0–299 go. The oldest key, then
    // block 0 (1,000 commits, checkpoints 300/600/900), which holds commits past the cutoff.
    expect(await cleanup(500)).toEqual({ filesDeleted: 300, listed: 1 + 1_003 });
    expect((await logKeys())[0]).toBe('00000000000000000300.checkpoint.parquet');
    // Up to checkpoint 1,500: block 0 is what is left of it (700 commits, 3 checkpoints), block 1 whole.
    expect(await cleanup(1_650)).toEqual({ filesDeleted: 1_200 + 4, listed: 1 + 703 + 1_003 });
    expect((await logKeys())[0]).toBe('00000000000000001500.checkpoint.parquet');

    // A file left below an emptied block (block 1 emptied by the cleanup to 2,100): the walk
    // meets the gap and lists the whole log, so the file still goes.
    expect((await cleanup(2_150)).filesDeleted).toBe(600 + 2);
    await fs.writeFile(path.join(copy, '_delta_log', '00000000000000000007.crc'), '{}');
    await fs.utimes(path.join(copy, '_delta_log', '00000000000000000007.crc'), at(7) / 1000, at(7) / 1000);
    const left = (await logKeys()).length;
    expect(await cleanup(2_450)).toEqual({ filesDeleted: 1 + 300 + 1, listed: 1 + 1 + left + 1 });
    expect((await logKeys())[0]).toBe('00000000000000002400.checkpoint.parquet');
    const reopened = await LakeTable.open(new LocalStorage(copy));
    expect((await reopened.snapshot()).version).toBe(COMMITS);
    expect((await reopened.snapshot({ version: 2_400 })).files.length).toBe(2_400);
  });

  // Vacuum listed the whole table, the log with it, on every compaction pass (once a minute).
  it('vacuum lists the data files, not the log', async () => {
    await fs.writeFile(path.join(root, 'orphan.parquet'), 'left by a crashed writer');
    const storage = new CountingStorage(root);
    const table = await LakeTable.open(storage);
    storage.listed = 0;
    const result = await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000 });
    expect(result.filesDeleted).toEqual(['orphan.parquet']);
    // The latest snapshot's reload lists from the newest checkpoint (2,400: 202 keys, its whole
    // block's 603 before listings started at the version); the vacuum itself the orphan alone.
    expect(storage.listed).toBe(202 + 1);
  });

  // Last: it removes the log's first block, as log clean-up does once a later checkpoint covers it.
  it('a version or a time cleaned up from the log is not found, not "no table"', async () => {
    const log = path.join(root, '_delta_log');
    for (const f of await fs.readdir(log)) if (f.startsWith('00000000000000000')) await fs.rm(path.join(log, f));
    await expect(load({ version: 150 })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
    await expect(load({ timestampMs: at(500) })).rejects.toMatchObject({ code: 'LAKE_VERSION_NOT_FOUND' });
    expect(await load({ version: 1_500 })).toMatchObject({ version: 1_500, files: 1_500 });
  });
});
