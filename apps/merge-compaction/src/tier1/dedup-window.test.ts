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
    const w = new DedupWindow(120_000, { sliceMs: 60_000 });
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

  it('leaves a DLQ replay older than the watermark to bronze (unsure) instead of keeping it unchecked', () => {
    const w = new DedupWindow(120_000, { sliceMs: 60_000 });
    w.remember([ev('new', 10 * 60_000)]);
    const r = w.check([ev('retry', 0), { ...ev('replay', 0), replayed: true }, { ...ev('fresh-replay', 10 * 60_000), replayed: true }]);
    expect(r.late.map((x) => x.eventId)).toEqual(['retry', 'replay']);
    // Inside the watermark memory answers for a replay as for any record.
    expect(r.unsure.map((x) => x.eventId)).toEqual(['replay']);
    expect(r.keep.map((x) => x.eventId)).toEqual(['retry', 'replay', 'fresh-replay']);
  });

  it('keeps everything inside the watermark even across slice boundaries', () => {
    const w = new DedupWindow(120_000, { sliceMs: 60_000 });
    const ids = Array.from({ length: 300 }, (_, i) => ev(`e${i}`, i * 1000));
    w.remember(ids);
    // horizon = 299s - 120s = 179s: every id at ≥179s must still be known.
    for (const r of ids.filter((r) => r.eventTimeMs >= 179_000)) expect(w.has(r.eventId, r.eventTimeMs)).toBe(true);
  });

  describe('with maxIds', () => {
    // 10 s slices, 10 ids per slice: ids at t = 0..99 s.
    const fill = () => Array.from({ length: 100 }, (_, i) => ev(`e${i}`, i * 1000));

    it('drops the oldest slices over the bound and leaves their ids, still inside the watermark, to bronze', () => {
      const w = new DedupWindow(600_000, { sliceMs: 10_000, maxIds: 35 });
      w.remember(fill());
      // 30 ids in three slices remain (70..99 s); memory covers from 70 s on.
      expect(w.size).toBe(30);
      expect(w.memoryFromMs).toBe(70_000);
      const r = w.check([ev('e95', 95_000), ev('e12', 12_000), ev('x', 12_000), ev('x', 12_000), ev('new', 99_500)]);
      expect(r.duplicates.map((x) => x.eventId)).toEqual(['e95', 'x']);
      expect(r.unsure.map((x) => x.eventId)).toEqual(['e12', 'x']);
      expect(r.keep.map((x) => x.eventId)).toEqual(['e12', 'x', 'new']);
      expect(r.late).toEqual([]);
    });

    it('calls records before the watermark late, not unsure', () => {
      const w = new DedupWindow(50_000, { sliceMs: 10_000, maxIds: 15 });
      w.remember(fill());
      expect(w.memoryFromMs).toBe(90_000);
      const r = w.check([ev('old', 10_000), ev('mid', 60_000)]);
      expect(r.late.map((x) => x.eventId)).toEqual(['old']);
      expect(r.unsure.map((x) => x.eventId)).toEqual(['mid']);
    });

    it('never drops the newest slice, and does not hold ids committed below what memory covers', () => {
      const w = new DedupWindow(600_000, { sliceMs: 1_000_000, maxIds: 5 });
      w.remember(fill());
      expect(w.size).toBe(100);
      const small = new DedupWindow(600_000, { sliceMs: 10_000, maxIds: 10 });
      small.remember(fill());
      expect(small.memoryFromMs).toBe(90_000);
      small.remember([ev('back', 5_000)]);
      expect(small.size).toBe(10);
      expect(small.check([ev('back', 5_000)]).unsure).toHaveLength(1);
    });

    it('shrinks at once when its share of the budget shrinks', () => {
      const w = new DedupWindow(600_000, { sliceMs: 10_000 });
      w.remember(fill());
      expect(w.size).toBe(100);
      w.setMaxIds(20);
      expect(w.size).toBe(20);
      expect(w.memoryFromMs).toBe(80_000);
    });

    it('loaded from a truncated bronze read, covers only above the oldest id it got', () => {
      const w = new DedupWindow(600_000, { sliceMs: 10_000, maxIds: 1000 });
      const newest = fill().slice(-25).reverse();
      w.load(newest, true);
      expect(w.memoryFromMs).toBe(75_001);
      expect(w.check([ev('e75', 75_000)]).unsure).toHaveLength(1);
      expect(w.check([ev('e76', 76_000)]).duplicates).toHaveLength(1);
      const full = new DedupWindow(600_000, { sliceMs: 10_000, maxIds: 1000 });
      full.load(fill(), false);
      expect(full.memoryFromMs).toBe(-Infinity);
      expect(full.check([ev('e0', 0)]).duplicates).toHaveLength(1);
    });
  });

  it('an event dated far ahead does not move the edge past the clock: later events are still checked', () => {
    const now = 10_000_000;
    const w = new DedupWindow(60_000, { sliceMs: 10_000, now: () => now });
    w.remember([ev('a', now - 1_000), ev('future', now + 1_000 * 86_400_000)]);
    expect(w.horizonMs).toBe(now - 60_000);
    const verdict = w.check([ev('a', now - 1_000), ev('b', now - 2_000), ev('future', now + 1_000 * 86_400_000)]);
    expect(verdict.duplicates.map((r) => r.eventId)).toEqual(['a', 'future']);
    expect(verdict.late).toEqual([]);
  });
});
