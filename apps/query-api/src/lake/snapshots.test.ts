import { queryError } from '../errors';
import { parseReadOptions } from '../http/request-options';
import type { LakePort, TableSnapshot } from './lake-port';
import { SnapshotTracker, reached } from './snapshots';

function snap(version: number, txns: Record<string, number> = {}): TableSnapshot {
  return { table: 't', version, commitTimeMs: 0, shape: { columns: [], partitionColumns: [] }, files: [], txns, configuration: {} };
}

class CountingLake {
  loads = 0;
  checks = 0;
  version = 1;
  async changedSince(s: TableSnapshot) {
    this.checks++;
    return s.version !== this.version;
  }
  async latest() {
    this.loads++;
    await new Promise((r) => setTimeout(r, 5));
    return snap(this.version, { a: this.version * 10 });
  }
}

describe('SnapshotTracker', () => {
  it('loads once for concurrent callers and serves a stale snapshot while refreshing', async () => {
    let now = 0;
    const lake = new CountingLake();
    const tracker = new SnapshotTracker(lake as unknown as LakePort, 100, () => now);
    const first = await Promise.all([tracker.latest('t'), tracker.latest('t'), tracker.latest('t')]);
    expect(first.map((s) => s.version)).toEqual([1, 1, 1]);
    expect(lake.loads).toBe(1);
    lake.version = 2;
    now = 150; // stale but within 4 intervals: old answer now, reload behind it
    expect((await tracker.latest('t')).version).toBe(1);
    await new Promise((r) => setTimeout(r, 20));
    expect((await tracker.latest('t')).version).toBe(2);
    lake.version = 3;
    now = 1000; // far too old: wait for the reload
    expect((await tracker.latest('t')).version).toBe(3);
  });

  it('does not reload while the log has no newer commit', async () => {
    let now = 0;
    const lake = new CountingLake();
    const tracker = new SnapshotTracker(lake as unknown as LakePort, 100, () => now);
    await tracker.latest('t');
    for (now = 1000; now < 5000; now += 1000) expect((await tracker.latest('t')).version).toBe(1);
    expect(lake.loads).toBe(1);
    expect(lake.checks).toBe(4);
  });

  // With the clock standing still, a snapshot loaded "0 ms ago" was served as fresh: a commit
  // landing in the same millisecond as the last load went unseen (a flaky app test showed it).
  it('reads the log on every call with a maximum age of 0, even within one millisecond', async () => {
    const lake = new CountingLake();
    const tracker = new SnapshotTracker(lake as unknown as LakePort, 0, () => 42);
    expect((await tracker.latest('t')).version).toBe(1);
    lake.version = 2;
    expect((await tracker.latest('t')).version).toBe(2);
    expect((await tracker.latest('t', 0)).version).toBe(2);
    expect(lake.checks).toBe(2);
  });

  it('waits for offsets, then times out with where the table stands', async () => {
    const lake = new CountingLake();
    const tracker = new SnapshotTracker(lake as unknown as LakePort, 0);
    setTimeout(() => (lake.version = 2), 30);
    expect((await tracker.waitFor('t', { offsets: { a: 20 } }, 1000)).version).toBe(2);
    await expect(tracker.waitFor('t', { version: 9, timeoutMs: 50 }, 1000)).rejects.toMatchObject({ code: 'QUERY_WAIT_TIMEOUT', details: { version: 2 } });
  });

  it('reached() needs the version and every listed appId', () => {
    expect(reached(snap(3, { a: 5 }), { version: 3, offsets: { a: 5 } })).toBe(true);
    expect(reached(snap(3, { a: 5 }), { version: 4 })).toBe(false);
    expect(reached(snap(3, { a: 5 }), { offsets: { a: 6 } })).toBe(false);
    expect(reached(snap(3, { a: 5 }), { offsets: { b: 0 } })).toBe(false);
  });

  // `waitOffsets=toString:999` used to count as reached (the inherited function compared with a
  // number is never below it), and `__proto__:5` was dropped by the parser: no wait at all.
  it('reached() counts only app ids the table has, whatever their names', () => {
    expect(reached(snap(3, { a: 5 }), { offsets: { toString: 999 } })).toBe(false);
    expect(reached(snap(3, { a: 5 }), { offsets: { constructor: 0 } })).toBe(false);
    const { waitFor } = parseReadOptions({ waitOffsets: '__proto__:5,a:5' });
    expect(Object.entries(waitFor!.offsets!)).toEqual([['__proto__', 5], ['a', 5]]);
    expect(reached(snap(3, { a: 5 }), waitFor!)).toBe(false);
    expect(reached(snap(3, Object.fromEntries([['__proto__', 5], ['a', 5]])), waitFor!)).toBe(true);
  });

  it('passes load errors to the waiting caller', async () => {
    const tracker = new SnapshotTracker({ latest: () => Promise.reject(queryError('QUERY_TABLE_UNKNOWN')) } as unknown as LakePort, 100);
    await expect(tracker.latest('t')).rejects.toMatchObject({ code: 'QUERY_TABLE_UNKNOWN' });
  });

  it('warms every table before traffic, within a bound, naming those it could not load', async () => {
    const loadedAt: string[] = [];
    const lake = {
      latest: (table: string) => {
        if (table === 'missing') return Promise.reject(queryError('QUERY_TABLE_UNKNOWN'));
        if (table === 'refused') return Promise.reject(queryError('QUERY_LAKE_UNAVAILABLE', undefined, { cause: 'LAKE_STORAGE_ACCESS_DENIED' }));
        if (table === 'stuck') return new Promise<never>(() => undefined);
        loadedAt.push(table);
        return Promise.resolve(snap(1, {}));
      },
    };
    const tracker = new SnapshotTracker(lake as unknown as LakePort, 60_000);
    const started = Date.now();
    const notLoaded = await tracker.warm(['a', 'missing', 'refused', 'stuck', 'b'], 200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(notLoaded).toEqual([
      { table: 'missing', reason: 'QUERY_TABLE_UNKNOWN' },
      // The storage's refusal behind the code: a deployment mistake, not a bug of the service.
      { table: 'refused', reason: 'QUERY_LAKE_UNAVAILABLE (LAKE_STORAGE_ACCESS_DENIED)' },
      { table: 'stuck', reason: 'not loaded within 200 ms' },
    ]);
    // The warmed tables are served without another log read.
    await tracker.latest('a');
    expect(loadedAt).toEqual(['a', 'b']);
  });
});
