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
    expect(synced[1]).toMatch(/\/_delta_log\/\.00000000000000000000\.json\..*\.tmp$/);
    expect(synced[2]).toBe(log);
  });

  it('fsyncs a data file moved in and the partition directory it lands in', async () => {
    const storage = new LocalStorage(root);
    const local = path.join(root, 'staged.parquet');
    await fs.writeFile(local, 'PAR1');
    await storage.putFile('day=2026-01-01/bucket=3/part-0.parquet', local);
    const partition = path.join(root, 'day=2026-01-01', 'bucket=3');
    // The new directories' entries, deepest first, then the file, then the entry it gets.
    expect(synced).toEqual([path.join(root, 'day=2026-01-01'), root, local, partition]);
    await storage.put('_last_checkpoint', Buffer.from('{}'));
    expect(synced.slice(4)).toEqual([expect.stringMatching(/\/\._last_checkpoint\..*\.tmp$/), root]);
  });
});
