import { MicroBatcher } from './micro-batcher';

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
    b.retain((r) => r.p === 1, () => 7);
    expect(b.size).toBe(1);
    expect(b.heldBytes).toBe(7);
    expect(b.take()!.reason).toBe('flush');
  });
});
