import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LocalStorage } from './local-storage';

// A power loss cannot be staged here; what can be checked is that every write reaches fsync
// before it has its final name, and that the directory holding the new name is synced after.
describe('LocalStorage durability', () => {
  let root: string;
  let synced: string[];
  let restore: () => void;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'local-storage-'));
    synced = [];
    const probe = await fs.open(path.join(root, '.probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const original = proto.sync;
    // Records which path each fsync was for (the handle's fd, resolved through /proc).
    proto.sync = async function (this: { fd: number }) {
      synced.push(await fs.readlink(`/proc/self/fd/${this.fd}`));
      return original.call(this);
    };
    restore = () => (proto.sync = original);
  });
  afterEach(async () => {
    restore();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('fsyncs a commit file before linking it, then its directory and the directories it created', async () => {
    const storage = new LocalStorage(root);
    expect(await storage.putIfAbsent('_delta_log/00000000000000000000.json', Buffer.from('{}\n'))).toBe(true);
    const log = path.join(root, '_delta_log');
    expect(synced[0]).toBe(root); // the new _delta_log entry
    expect(synced[1]).toBe(path.dirname(root)); // the root's entry, once per handle
    expect(synced[2]).toMatch(/\/_delta_log\/\.00000000000000000000\.json\..*\.tmp$/);
    expect(synced[3]).toBe(log);
  });

  it('fsyncs a data file moved in and the partition directory it lands in', async () => {
    const storage = new LocalStorage(root);
    const local = path.join(root, 'staged.parquet');
    await fs.writeFile(local, 'PAR1');
    await storage.putFile('day=2026-01-01/bucket=3/part-0.parquet', local);
    const partition = path.join(root, 'day=2026-01-01', 'bucket=3');
    // The new directories' entries, deepest first, and the root's, then the file, then the entry it gets.
    expect(synced).toEqual([path.join(root, 'day=2026-01-01'), root, path.dirname(root), local, partition]);
    await storage.put('_last_checkpoint', Buffer.from('{}'));
    expect(synced.slice(5)).toEqual([expect.stringMatching(/\/\._last_checkpoint\..*\.tmp$/), root]);
  });

  it('makes a partition directory another writer created durable before a file in it is committed, once per handle', async () => {
    // Another writer created it and may not have synced its entry yet: mkdir does not say so.
    const partition = path.join(root, 'day=2026-01-02', 'bucket=1');
    await fs.mkdir(partition, { recursive: true });
    const storage = new LocalStorage(root);
    const staged = async (name: string) => {
      const local = path.join(root, name);
      await fs.writeFile(local, 'PAR1');
      return local;
    };
    const first = await staged('a.parquet');
    await storage.putFile('day=2026-01-02/bucket=1/part-0.parquet', first);
    expect(synced).toEqual([path.join(root, 'day=2026-01-02'), root, path.dirname(root), first, partition]);
    const second = await staged('b.parquet');
    await storage.putFile('day=2026-01-02/bucket=1/part-1.parquet', second);
    expect(synced.slice(5)).toEqual([second, partition]);
  });

  it('syncs directories made anew after they were removed, though the handle synced them before (a table created again)', async () => {
    const storage = new LocalStorage(root);
    await storage.putIfAbsent('_delta_log/00000000000000000000.json', Buffer.from('{}\n'));
    await fs.rm(root, { recursive: true });
    synced.length = 0;
    expect(await storage.putIfAbsent('_delta_log/00000000000000000000.json', Buffer.from('{}\n'))).toBe(true);
    const log = path.join(root, '_delta_log');
    expect(synced).toEqual([root, path.dirname(root), expect.stringMatching(/\/_delta_log\/\.00000000000000000000\.json\..*\.tmp$/), log]);
  });
});

describe('LocalStorage listing', () => {
  let root: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'local-list-'));
    const storage = new LocalStorage(root);
    for (const key of ['0.parquet', '_delta_log/00000000000000000000.json', '_delta_log/00000000000000000001.json', 'a/b.parquet', 'p=1/c.parquet', 'z.parquet']) {
      await storage.put(key, Buffer.from(key));
    }
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('a limited listing is the first keys in order; an excluded prefix is left out, its directory not entered', async () => {
    const storage = new LocalStorage(root);
    expect((await storage.list('_delta_log/0', { limit: 1 })).map((o) => o.key)).toEqual(['_delta_log/00000000000000000000.json']);
    expect((await storage.list('', { limit: 2 })).map((o) => o.key)).toEqual(['0.parquet', '_delta_log/00000000000000000000.json']);
    expect((await storage.list('', { exclude: ['_delta_log/'] })).map((o) => o.key)).toEqual(['0.parquet', 'a/b.parquet', 'p=1/c.parquet', 'z.parquet']);
    // Not entered: the excluded directory is never read.
    const readdir = jest.spyOn(fs, 'readdir');
    try {
      await storage.list('', { exclude: ['_delta_log/'] });
      expect(readdir.mock.calls.map(([dir]) => path.relative(root, String(dir))).sort()).toEqual(['', 'a', 'p=1']);
    } finally {
      readdir.mockRestore();
    }
  });

  it('a listing after a key holds only the keys after it, and stats no other', async () => {
    const storage = new LocalStorage(root);
    expect((await storage.list('_delta_log/', { startAfter: '_delta_log/00000000000000000000.~' })).map((o) => o.key)).toEqual(['_delta_log/00000000000000000001.json']);
    expect((await storage.list('', { startAfter: 'a/b.parquet', limit: 1 })).map((o) => o.key)).toEqual(['p=1/c.parquet']);
    expect(await storage.list('_delta_log/', { startAfter: '_delta_log/00000000000000000001.json' })).toEqual([]);
    const stat = jest.spyOn(fs, 'stat');
    try {
      await storage.list('', { startAfter: 'p=1/c.parquet' });
      expect(stat.mock.calls.map(([file]) => path.relative(root, String(file)))).toEqual(['z.parquet']);
    } finally {
      stat.mockRestore();
    }
  });
});
