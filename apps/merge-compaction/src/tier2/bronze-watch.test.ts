import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import { TableSet } from '../tables/table-set';
import { BronzeWatch, RESYNC_LOOKS } from './bronze-watch';

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });

describe('BronzeWatch', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bronze-watch-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  afterAll(() => telemetry.shutdown());

  const storageFor = (name: string) => new LocalStorage(join(dir, name));
  /** Tier 1 in another process: its own handle on the table. */
  const writer = () => LakeTable.open(storageFor('bronze_orders'), { name: 'bronze_orders' });

  function watch(onCommit: () => void, intervalMs = 10_000): BronzeWatch {
    const tables = new TableSet({ storageFor, tablePrefix: '' });
    return new BronzeWatch({ tables, bronzeTables: ['bronze_orders'], intervalMs, onCommit, logger: telemetry.logger, retryMaxMs: 1000 });
  }

  it("calls back once for each commit another handle makes, not for a table's first sight or an unchanged log", async () => {
    const onCommit = jest.fn();
    const w = watch(onCommit);
    expect(await w.check()).toBe(false); // no table yet
    await LakeTable.create(storageFor('bronze_orders'), { name: 'bronze_orders', columns: [{ name: 'id', type: 'long' }] });
    expect(await w.check()).toBe(false); // first sight: its version is where it starts
    expect(await w.check()).toBe(false);
    await (await writer()).addColumns([{ name: 'note', type: 'string' }]);
    expect(await w.check()).toBe(true);
    expect(onCommit).toHaveBeenCalledTimes(1);
    expect(await w.check()).toBe(false);
    // Two commits between looks: one wake (the fold reads the latest log), then quiet.
    const other = await writer();
    await other.addColumns([{ name: 'a', type: 'string' }]);
    await other.addColumns([{ name: 'b', type: 'string' }]);
    expect([await w.check(), await w.check()]).toEqual([true, false]);
    expect(onCommit).toHaveBeenCalledTimes(2);
  });

  it('a table it cannot look at holds back no other', async () => {
    const broken = new LocalStorage(join(dir, 'bronze_broken'));
    broken.list = () => Promise.reject(new Error('storage refused'));
    const tables = new TableSet({ storageFor: (name) => (name === 'bronze_broken' ? broken : storageFor(name)), tablePrefix: '' });
    const onCommit = jest.fn();
    const w = new BronzeWatch({ tables, bronzeTables: ['bronze_broken', 'bronze_orders'], intervalMs: 10_000, onCommit, logger: telemetry.logger, retryMaxMs: 1000 });
    await LakeTable.create(storageFor('bronze_orders'), { name: 'bronze_orders', columns: [{ name: 'id', type: 'long' }] });
    expect(await w.check()).toBe(false);
    await (await writer()).addColumns([{ name: 'note', type: 'string' }]);
    expect(await w.check()).toBe(true);
    expect(onCommit).toHaveBeenCalledTimes(1);
  });

  it('follows a table created again at fewer versions within RESYNC_LOOKS looks', async () => {
    const create = () => LakeTable.create(storageFor('bronze_orders'), { name: 'bronze_orders', columns: [{ name: 'id', type: 'long' }] });
    await create();
    const w = watch(() => undefined);
    await w.check();
    for (const column of ['a', 'b', 'c']) await (await writer()).addColumns([{ name: column, type: 'string' }]);
    expect(await w.check()).toBe(true); // at version 3
    await rm(join(dir, 'bronze_orders'), { recursive: true });
    await create();
    await (await writer()).addColumns([{ name: 'a', type: 'string' }]); // version 1 of the new table
    for (let i = 0; i < RESYNC_LOOKS; i++) await w.check();
    await (await writer()).addColumns([{ name: 'b', type: 'string' }]);
    expect(await w.check()).toBe(true);
  });

  it('looks by itself every interval once started, and not after stop', async () => {
    await LakeTable.create(storageFor('bronze_orders'), { name: 'bronze_orders', columns: [{ name: 'id', type: 'long' }] });
    let commits = 0;
    const w = watch(() => commits++, 20);
    w.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 100)); // its first look (at start) records version 0
      await (await writer()).addColumns([{ name: 'note', type: 'string' }]);
      const deadline = Date.now() + 5_000;
      while (commits === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(commits).toBe(1);
    } finally {
      await w.stop();
    }
    await (await writer()).addColumns([{ name: 'late', type: 'string' }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(commits).toBe(1);
  });
});
