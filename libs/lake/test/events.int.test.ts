import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LAKE_CHANNELS, LakeTable, LocalStorage, type CheckpointFailedEvent } from '../src';
import { tempDir } from './helpers';

describe('diagnostics_channel events', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-events');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('publishes commit, merge, compaction, vacuum, checkpoint and table-stats payloads', async () => {
    const seen: Record<string, Record<string, unknown>[]> = {};
    const handlers = Object.values(LAKE_CHANNELS).map((name) => {
      const h = (msg: unknown) => (seen[name] ??= []).push(msg as Record<string, unknown>);
      subscribe(name, h);
      return { name, h };
    });
    try {
      const table = await LakeTable.create(new LocalStorage(path.join(dir, 't')), {
        columns: [{ name: 'k', type: 'long' }, { name: 'v', type: 'long' }, { name: 'b', type: 'integer' }],
        partitionColumns: ['b'],
        properties: { 'delta.checkpointInterval': '3' },
        name: 'events_t',
      });
      await table.append({ rows: [{ k: 1, v: 1, b: 0 }] }, { txns: [{ appId: 'a', version: 1 }] });
      await table.append({ rows: [{ k: 2, v: 1, b: 0 }] });
      await table.merge({ source: { rows: [{ k: 1, v: 2, b: 0 }] }, keys: ['k'], versionColumn: 'v' });
      await table.compact();
      await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000 });
      await table.snapshot();
    } finally {
      for (const { name, h } of handlers) unsubscribe(name, h);
    }
    const commits = seen[LAKE_CHANNELS.commit];
    expect(commits.map((c) => c.operation)).toEqual(['CREATE TABLE', 'WRITE', 'WRITE', 'MERGE', 'OPTIMIZE']);
    expect(commits[1]).toMatchObject({ table: 'events_t', version: 1, attempts: 1, actions: { add: 1, txn: 1, remove: 0 } });
    expect(typeof commits[1].durationMs).toBe('number');
    expect(seen[LAKE_CHANNELS.merge][0]).toMatchObject({ table: 'events_t', version: 3, filesRewritten: 1 });
    expect(seen[LAKE_CHANNELS.compaction][0]).toMatchObject({ filesRemoved: 2, filesAdded: 1 });
    expect(seen[LAKE_CHANNELS.vacuum][0]).toMatchObject({ filesDeleted: 3 });
    expect(seen[LAKE_CHANNELS.checkpoint][0]).toMatchObject({ version: 3 });
    expect(seen[LAKE_CHANNELS.tableStats].at(-1)).toMatchObject({ table: 'events_t', version: 4, files: 1, smallFiles: 1, compactionBacklog: 0 });
  });

  it('publishes a checkpoint that failed after a commit, and the commit stands', async () => {
    // A store that takes every write but checkpoints (a full disk, a refused key).
    class NoCheckpoints extends LocalStorage {
      override async put(key: string, body: Uint8Array): Promise<void> {
        if (key.endsWith('.checkpoint.parquet')) throw Object.assign(new Error(`refused ${key}`), { code: 'EIO' });
        return super.put(key, body);
      }
    }
    const failed: CheckpointFailedEvent[] = [];
    const h = (msg: unknown) => failed.push(msg as CheckpointFailedEvent);
    subscribe(LAKE_CHANNELS.checkpointFailed, h);
    try {
      const table = await LakeTable.create(new NoCheckpoints(path.join(dir, 'no-cp')), {
        columns: [{ name: 'k', type: 'long' }],
        properties: { 'delta.checkpointInterval': '2' },
        name: 'no_cp',
      });
      await table.append({ rows: [{ k: 1 }] });
      const second = await table.append({ rows: [{ k: 2 }] });
      expect(second.version).toBe(2);
      expect((await table.snapshot()).version).toBe(2);
    } finally {
      unsubscribe(LAKE_CHANNELS.checkpointFailed, h);
    }
    expect(failed).toEqual([expect.objectContaining({ table: 'no_cp', version: 2, code: 'EIO', message: expect.stringContaining('refused') })]);
  });

  it('checkpoints at the default interval when another writer set delta.checkpointInterval to something that is not a number', async () => {
    const root = path.join(dir, 'foreign-interval');
    await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'k', type: 'long' }], properties: { 'delta.checkpointInterval': '3' } });
    // Another writer's metadata: this library refuses the value at create, Delta readers ignore it.
    const first = path.join(root, '_delta_log', '00000000000000000000.json');
    const text = await fs.readFile(first, 'utf8');
    await fs.writeFile(first, text.replace('"delta.checkpointInterval":"3"', '"delta.checkpointInterval":"ten"'));
    expect(await fs.readFile(first, 'utf8')).toContain('"ten"');
    const table = await LakeTable.open(new LocalStorage(root));
    for (let i = 0; i < 10; i++) await table.append({ rows: [{ k: i }] });
    const log = await fs.readdir(path.join(root, '_delta_log'));
    expect(log).toContain('00000000000000000010.checkpoint.parquet');
  });

  it("counts small files and compaction backlog by the caller's compaction thresholds", async () => {
    const stats: Record<string, unknown>[] = [];
    const h = (msg: unknown) => stats.push(msg as Record<string, unknown>);
    subscribe(LAKE_CHANNELS.tableStats, h);
    try {
      const root = path.join(dir, 'stats-thresholds');
      await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'k', type: 'long' }, { name: 'b', type: 'integer' }], partitionColumns: ['b'] });
      // Compaction picks up a partition once it holds 3 files under 1 MB: two files are not backlog yet.
      const table = await LakeTable.open(new LocalStorage(root), { name: 'stats_t', compactionStats: { smallFileBytes: 1024 * 1024, minSmallFiles: 3 } });
      await table.append({ rows: [{ k: 1, b: 0 }] });
      await table.append({ rows: [{ k: 2, b: 0 }] });
      await table.snapshot();
      expect(stats.at(-1)).toMatchObject({ table: 'stats_t', files: 2, smallFiles: 2, compactionBacklog: 0 });
      await table.append({ rows: [{ k: 3, b: 0 }] });
      await table.snapshot();
      expect(stats.at(-1)).toMatchObject({ files: 3, smallFiles: 3, compactionBacklog: 3 });
      // An amortised merge's tail is drained by folds, never compacted: none of its files counts.
      await table.merge({ keys: ['k'], versionColumn: 'k', source: { rows: [{ k: 9, b: 0 }] }, amortise: { foldFraction: 10 } });
      await table.merge({ keys: ['k'], versionColumn: 'k', source: { rows: [{ k: 10, b: 0 }] }, amortise: { foldFraction: 10 } });
      await table.currentView();
      expect(stats.filter((e) => e.table === 'stats_t#tail').at(-1)).toMatchObject({ smallFiles: 0, compactionBacklog: 0 });
      // A threshold below every file: none is small.
      const strict = await LakeTable.open(new LocalStorage(root), { name: 'stats_strict', compactionStats: { smallFileBytes: 1, minSmallFiles: 3 } });
      await strict.snapshot();
      expect(stats.at(-1)).toMatchObject({ table: 'stats_strict', smallFiles: 0, compactionBacklog: 0 });
    } finally {
      unsubscribe(LAKE_CHANNELS.tableStats, h);
    }
  });
});

