import { DedupWindow } from './dedup-window';

const ev = (eventId: string, eventTimeMs: number) => ({ eventId, eventTimeMs });

describe('DedupWindow', () => {
  it('drops ids already committed and repeats inside one batch, keeping first copies', () => {
    const w = new DedupWindow(60_000);
    const first = w.check([ev('a', 1000), ev('b', 2000), ev('a', 1000)]);
    expect(first.keep.map((r) => r.eventId)).toEqual(['a', 'b']);
    expect(first.duplicates.map((r) => r.eventId)).toEqual(['a']);
    w.remember(first.keep);
    const second = w.check([ev('b', 2000), ev('c', 3000)]);
    expect(second.keep.map((r) => r.eventId)).toEqual(['c']);
    expect(second.duplicates.map((r) => r.eventId)).toEqual(['b']);
  });

  it('does not change state on check, so a failed commit retried gives the same verdicts', () => {
    const w = new DedupWindow(60_000);
    const batch = [ev('x', 1), ev('y', 2)];
    expect(w.check(batch).keep).toHaveLength(2);
    expect(w.check(batch).keep).toHaveLength(2);
    expect(w.size).toBe(0);
  });

  it('expires ids older than the watermark by event time and flags late events', () => {
    const w = new DedupWindow(120_000, 60_000);
    w.remember([ev('old', 0)]);
    expect(w.size).toBe(1);
    w.remember([ev('new', 10 * 60_000)]);
    expect(w.size).toBe(1);
    expect(w.has('old', 0)).toBe(false);
    const r = w.check([ev('old', 0), ev('new', 10 * 60_000)]);
    expect(r.late.map((x) => x.eventId)).toEqual(['old']);
    expect(r.keep.map((x) => x.eventId)).toEqual(['old']);
    expect(r.duplicates.map((x) => x.eventId)).toEqual(['new']);
  });

  it('keeps everything inside the watermark even across slice boundaries', () => {
    const w = new DedupWindow(120_000, 60_000);
    const ids = Array.from({ length: 300 }, (_, i) => ev(`e${i}`, i * 1000));
    w.remember(ids);
    // horizon = 299s - 120s = 179s: every id at ≥179s must still be known.
    for (const r of ids.filter((r) => r.eventTimeMs >= 179_000)) expect(w.has(r.eventId, r.eventTimeMs)).toBe(true);
  });
});
