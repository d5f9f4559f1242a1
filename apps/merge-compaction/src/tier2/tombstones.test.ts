import { TombstoneMemory } from './tombstones';

describe('TombstoneMemory', () => {
  it('supersedes versions at or below the deleted one', () => {
    const m = new TombstoneMemory(60_000);
    m.remember('k', 5, 1000);
    expect(m.supersedes('k', 4)).toBe(true);
    expect(m.supersedes('k', 5)).toBe(true);
    expect(m.supersedes('k', 6)).toBe(false);
    expect(m.supersedes('other', 1)).toBe(false);
    m.remember('k', 3, 1000);
    expect(m.supersedes('k', 5)).toBe(true);
  });

  it('forgets tombstones older than the watermark', () => {
    const m = new TombstoneMemory(60_000);
    m.remember('old', 2, 0);
    m.remember('new', 2, 120_000);
    m.expire();
    expect(m.size).toBe(1);
    expect(m.supersedes('old', 1)).toBe(false);
    expect(m.supersedes('new', 1)).toBe(true);
  });
});
