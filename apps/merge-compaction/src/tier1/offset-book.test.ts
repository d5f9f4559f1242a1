import { lastOffsets, OffsetBook } from './offset-book';

const tp = (partition: number) => ({ topic: 't.valid', partition });

describe('OffsetBook', () => {
  it('seeks to the offset after the table txn, or the beginning when none', () => {
    const book = new OffsetBook('bronze:');
    expect(book.assign(tp(0), undefined)).toBe(0);
    expect(book.assign(tp(1), 41)).toBe(42);
    expect(book.appId(tp(1))).toBe('bronze:t.valid-1');
    expect(book.writtenOffset(tp(1))).toBe(41);
  });

  it('skips redelivered offsets and records of partitions it does not own', () => {
    const book = new OffsetBook('');
    book.assign(tp(0), 9);
    expect(book.accept(tp(0), 9)).toBe(false);
    expect(book.accept(tp(0), 10)).toBe(true);
    expect(book.accept(tp(0), 10)).toBe(false);
    expect(book.accept(tp(1), 0)).toBe(false);
    book.revoke(tp(0));
    expect(book.accept(tp(0), 11)).toBe(false);
  });

  it('lastOffsets keeps the maximum per partition', () => {
    const m = lastOffsets([
      { topic: 'a', partition: 0, offset: 5 },
      { topic: 'a', partition: 0, offset: 3 },
      { topic: 'a', partition: 1, offset: 1 },
    ]);
    expect([...m.values()].map((v) => v.offset)).toEqual([5, 1]);
  });
});
