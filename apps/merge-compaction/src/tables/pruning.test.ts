import type { LiveFile, Snapshot } from '@sluice/lake';
import { newestFirstChunks, rangesWithinBytes, windowRuns } from './pruning';

describe('windowRuns', () => {
  it('joins consecutive windows and keeps a late one apart', () => {
    const m = 60_000;
    expect(windowRuns([0, m, 2 * m, 10 * m, 11 * m], m)).toEqual([
      [0, 3 * m - 1],
      [10 * m, 12 * m - 1],
    ]);
    expect(windowRuns([], m)).toEqual([]);
  });
});

describe('newestFirstChunks', () => {
  // Files with an event-time maximum (undefined: no stats) and a size; the snapshot stub answers stats only.
  const file = (path: string, size: number, maxMs?: number) => ({ path, size, maxMs });
  const snapshotOf = (files: ReturnType<typeof file>[]): Snapshot =>
    ({
      files: files.map((f) => ({ path: f.path, key: f.path, size: f.size })),
      stats: (f: LiveFile) => {
        const maxMs = files.find((x) => x.path === f.path)?.maxMs;
        return maxMs === undefined ? undefined : { numRecords: 1, minValues: { t: new Date(0).toISOString() }, maxValues: { t: new Date(maxMs).toISOString() }, nullCount: {} };
      },
    }) as unknown as Snapshot;

  it('orders files newest first (no stats first) and cuts chunks at the byte bound, a larger file alone', () => {
    const snap = snapshotOf([file('a', 40, 1_000), file('b', 40, 3_000), file('c', 500, 2_000), file('d', 10), file('e', 30, 500)]);
    const chunks = newestFirstChunks(snap, (f) => f.path !== 'e', 't', 100);
    expect(chunks.map((c) => [c.files.map((f) => f.path), c.newest])).toEqual([
      [['d', 'b'], Infinity],
      [['c'], 2_000],
      [['a'], 1_000],
    ]);
  });
});

describe('rangesWithinBytes', () => {
  // Bronze files of Kafka partitions with offset stats (undefined: no stats) and a size.
  const file = (path: string, partition: number, size: number, offsets?: [number, number]) => ({ path, partition, size, offsets });
  const snapshotOf = (files: ReturnType<typeof file>[]): Snapshot =>
    ({
      files: files.map((f) => ({ path: f.path, key: f.path, size: f.size })),
      stats: (f: LiveFile) => {
        const x = files.find((y) => y.path === f.path)!;
        const min: Record<string, number> = { p: x.partition };
        const max: Record<string, number> = { p: x.partition };
        if (x.offsets) [min.o, max.o] = x.offsets;
        return { numRecords: 1, minValues: min, maxValues: max, nullCount: {} };
      },
    }) as unknown as Snapshot;
  const cut = (snap: Snapshot, ranges: { partition: number; from: number; to: number }[], maxBytes: number) => rangesWithinBytes(snap, ranges, maxBytes, 'p', 'o');

  it("stops each range below the first file past its share of the bytes; every row up to the new end is in a file it still reads", () => {
    // Partition 0: four files of 100 bytes, two buckets interleaving offsets. Partition 1: one file.
    const snap = snapshotOf([file('a', 0, 100, [0, 9]), file('b', 0, 100, [5, 19]), file('c', 0, 100, [20, 29]), file('d', 0, 100, [25, 40]), file('e', 1, 100, [0, 50])]);
    // 400 bytes for two ranges: 200 each; partition 0 reads a and b, so it stops below c's 20.
    expect(cut(snap, [{ partition: 0, from: -1, to: 40 }, { partition: 1, from: -1, to: 50 }], 400)).toEqual([
      { partition: 0, from: -1, to: 19 },
      { partition: 1, from: -1, to: 50 },
    ]);
    // Files wholly before `from` are not read and count for nothing.
    expect(cut(snap, [{ partition: 0, from: 19, to: 40 }], 200)).toEqual([{ partition: 0, from: 19, to: 40 }]);
    expect(cut(snap, [{ partition: 0, from: 19, to: 40 }], 100)).toEqual([{ partition: 0, from: 19, to: 24 }]);
    // No bound, or everything fits: unchanged.
    expect(cut(snap, [{ partition: 0, from: -1, to: 40 }], Infinity)).toEqual([{ partition: 0, from: -1, to: 40 }]);
    expect(cut(snap, [{ partition: 0, from: -1, to: 40 }], 1000)).toEqual([{ partition: 0, from: -1, to: 40 }]);
  });

  it('always moves a range forward: files it cannot leave out are read past the share', () => {
    // a and b both start at the first offset to fold: leaving b out would fold nothing.
    const snap = snapshotOf([file('a', 0, 500, [10, 20]), file('b', 0, 500, [10, 30]), file('c', 0, 500, [31, 40]), file('n', 0, 500)]);
    expect(cut(snap, [{ partition: 0, from: 9, to: 40 }], 100)).toEqual([{ partition: 0, from: 9, to: 30 }]);
  });
});
