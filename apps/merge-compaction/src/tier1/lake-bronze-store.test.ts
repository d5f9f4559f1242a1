import { timeClusters } from './lake-bronze-store';

describe('timeClusters (one bronze lookup per cluster of nearby event times)', () => {
  const key = (eventId: string, eventTimeMs: number) => ({ eventId, eventTimeMs });
  const HOUR = 3_600_000;

  it('keeps a replay from days ago out of the range of records from the last minutes', () => {
    const now = 10 * 24 * HOUR;
    const clusters = timeClusters([key('recent-1', now - 60_000), key('replay', now - 3 * 24 * HOUR), key('recent-2', now - 5_000)], HOUR);
    expect(clusters.map((c) => c.map((k) => k.eventId))).toEqual([['replay'], ['recent-1', 'recent-2']]);
  });

  it('chains neighbours within the gap, sorted by time, and splits at a wider gap', () => {
    const clusters = timeClusters([key('c', 2 * HOUR), key('a', 0), key('b', HOUR), key('d', 4 * HOUR)], HOUR);
    expect(clusters.map((c) => c.map((k) => k.eventId))).toEqual([['a', 'b', 'c'], ['d']]);
    expect(timeClusters([], HOUR)).toEqual([]);
  });
});
