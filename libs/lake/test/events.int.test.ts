import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LAKE_CHANNELS, LakeTable, LocalStorage } from '../src';
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
      await table.vacuum({ retentionMs: 0, nowMs: Date.now() + 1000 });
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
});
