import { TombstoneMemory } from './tombstones';

describe('TombstoneMemory', () => {
  it('supersedes versions at or below the deleted one', () => {
    const m = new TombstoneMemory(60_000);
    m.remember('k', 5, 1000, 0);
    expect(m.supersedes('k', 4)).toBe(true);
    expect(m.supersedes('k', 5)).toBe(true);
    expect(m.supersedes('k', 6)).toBe(false);
    expect(m.supersedes('other', 1)).toBe(false);
    m.remember('k', 3, 1000, 0);
    expect(m.supersedes('k', 5)).toBe(true);
  });

  it('forgets tombstones older than the watermark of their partition', () => {
    const m = new TombstoneMemory(60_000);
    m.remember('old', 2, 0, 0);
    m.remember('new', 2, 120_000, 0);
    m.expire();
    expect(m.size).toBe(1);
    expect(m.supersedes('old', 1)).toBe(false);
    expect(m.supersedes('new', 1)).toBe(true);
  });

  it("keeps a partition's tombstones while another partition runs ahead in event time", () => {
    const m = new TombstoneMemory(60_000);
    m.remember('behind', 3, 0, 1);
    m.observe(0, 30 * 60_000); // partition 0 is half an hour ahead
    m.remember('ahead', 2, 31 * 60_000, 0);
    m.expire();
    expect(m.supersedes('behind', 2)).toBe(true);
    // Its own partition moving past the watermark is what expires it; an upsert counts as well as a delete.
    m.observe(1, 120_000);
    m.expire();
    expect(m.supersedes('behind', 2)).toBe(false);
    expect(m.supersedes('ahead', 1)).toBe(true);
  });

  it('an event dated far ahead moves its partition only up to the clock: the tombstones of the last watermark stay', () => {
    const now = 10_000_000;
    const m = new TombstoneMemory(60_000, () => now);
    m.remember('deleted', 4, now - 1_000, 0);
    m.observe(0, now + 1_000 * 86_400_000);
    m.expire();
    expect(m.newestOf(0)).toBe(now);
    expect(m.supersedes('deleted', 3)).toBe(true);
  });
});
