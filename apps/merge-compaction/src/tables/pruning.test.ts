import type { LiveFile, Snapshot } from '@sluice/lake';
import { newestFirstChunks, windowRuns } from './pruning';

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
