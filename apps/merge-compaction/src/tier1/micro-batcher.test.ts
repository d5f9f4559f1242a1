import { inTurns, MicroBatcher } from './micro-batcher';

describe('MicroBatcher', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => (now = 1000));

  it('closes on the time bound measured from the first record', () => {
    const b = new MicroBatcher<number>({ maxMs: 100, maxBytes: 1e9, maxRecords: 1e9 }, clock);
    expect(b.due()).toBeUndefined();
    expect(b.msUntilDue()).toBe(Infinity);
    b.add(1, 10);
    now += 60;
    b.add(2, 10);
    expect(b.msUntilDue()).toBe(40);
    expect(b.due()).toBeUndefined();
    now += 40;
    expect(b.due()).toBe('time');
    const batch = b.take()!;
    expect(batch).toMatchObject({ records: [1, 2], bytes: 20, openedAt: 1000, reason: 'time' });
    expect(b.size).toBe(0);
    expect(b.take()).toBeUndefined();
  });

  it('closes on bytes and on record count, whichever comes first', () => {
    const bytes = new MicroBatcher<string>({ maxMs: 1e9, maxBytes: 25, maxRecords: 100 }, clock);
    expect(bytes.add('a', 10)).toBe(false);
    expect(bytes.add('b', 10)).toBe(false);
    expect(bytes.add('c', 10)).toBe(true);
    expect(bytes.take()!.reason).toBe('bytes');

    const count = new MicroBatcher<string>({ maxMs: 1e9, maxBytes: 1e9, maxRecords: 2 }, clock);
    count.add('a', 1);
    expect(count.add('b', 1)).toBe(true);
    expect(count.take()!.reason).toBe('records');
  });

  it('flush takes a partial batch and retain drops revoked records with their bytes', () => {
    const b = new MicroBatcher<{ p: number }>({ maxMs: 1e9, maxBytes: 1e9, maxRecords: 1e9 }, clock);
    b.add({ p: 0 }, 5);
    b.add({ p: 1 }, 7);
    b.add({ p: 0 }, 5);
    b.retain((r) => r.p === 1);
    expect(b.size).toBe(1);
    expect(b.heldBytes).toBe(7);
    expect(b.take()!.reason).toBe('flush');
  });

  it('hands out at most one bounded batch when records piled up past the bounds, keeping the rest in order', () => {
    // Records keep arriving while the previous batch is written: 7 records of 10 bytes against
    // bounds of 3 records or 25 bytes.
    const b = new MicroBatcher<number>({ maxMs: 100, maxBytes: 25, maxRecords: 3 }, clock);
    for (let i = 0; i < 7; i++) b.add(i, 10);
    now += 5;
    // 25 bytes are reached at the third record (the one that crosses the bound is in).
    expect(b.take()).toEqual({ records: [0, 1, 2], bytes: 30, openedAt: 1000, reason: 'bytes' });
    expect(b.size).toBe(4);
    expect(b.heldBytes).toBe(40);
    expect(b.due()).toBe('bytes');
    expect(b.take()).toMatchObject({ records: [3, 4, 5], bytes: 30, openedAt: 1000 });
    // The last one is under every size bound; it keeps the first opening time, so it is due by time.
    expect(b.due()).toBeUndefined();
    now = 1100;
    expect(b.take()).toEqual({ records: [6], bytes: 10, openedAt: 1000, reason: 'time' });
    expect(b.size).toBe(0);
    expect(b.heldBytes).toBe(0);

    // The record-count bound the same way; a record bigger than the byte bound goes alone.
    const count = new MicroBatcher<string>({ maxMs: 1e9, maxBytes: 1e9, maxRecords: 2 }, clock);
    ['a', 'b', 'c', 'd', 'e'].forEach((r) => count.add(r, 1));
    expect([count.take()!.records, count.take()!.records, count.take()!.records, count.take()]).toEqual([['a', 'b'], ['c', 'd'], ['e'], undefined]);
    const big = new MicroBatcher<string>({ maxMs: 1e9, maxBytes: 10, maxRecords: 100 }, clock);
    big.add('huge', 50);
    big.add('small', 1);
    expect(big.take()).toMatchObject({ records: ['huge'], bytes: 50, reason: 'bytes' });
    expect(big.take()).toMatchObject({ records: ['small'], bytes: 1, reason: 'flush' });
  });

  it('retain keeps the sizes of the records it keeps, so a later take is bounded by the right bytes', () => {
    const b = new MicroBatcher<{ p: number; n: number }>({ maxMs: 1e9, maxBytes: 12, maxRecords: 100 }, clock);
    [5, 7, 5, 7, 5].forEach((size, n) => b.add({ p: size === 7 ? 1 : 0, n }, size));
    b.retain((r) => r.p === 0);
    expect(b.heldBytes).toBe(15);
    expect(b.take()).toMatchObject({ records: [{ n: 0 }, { n: 2 }, { n: 4 }], bytes: 15 });
  });
});

describe('inTurns', () => {
  const bounds = { maxMs: 1000, maxRecords: 4, maxBytes: 100 };
  const cut = (groups: number[][]) => inTurns(groups, (g) => g.length, (g, i) => g[i], bounds);

  it('puts groups in one turn while their batches together stay within the bounds', () => {
    expect(cut([[10, 10], [10], [10]])).toEqual([[[10, 10], [10], [10]]]);
  });

  it('starts a new turn where the records or the bytes would pass the bounds, keeping the order', () => {
    // Records: 3 + 2 > 4. Bytes: 60 + 50 > 100.
    expect(cut([[1, 1, 1], [1, 1], [60], [50], [40]])).toEqual([[[1, 1, 1]], [[1, 1], [60]], [[50], [40]]]);
  });

  it("counts a group's batch only (a batch's worth is written per turn), and a group over the bounds alone is a turn of its own", () => {
    // The first group's batch is four records; the second's is its first record, 200 bytes.
    expect(cut([[1, 1, 1, 1, 1, 1], [200, 1], [1]])).toEqual([[[1, 1, 1, 1, 1, 1]], [[200, 1]], [[1]]]);
  });

  it('returns no turn for no group', () => {
    expect(cut([])).toEqual([]);
  });
});
