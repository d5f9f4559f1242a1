import { answerBytes } from './query-service';

describe('answerBytes (the result cache budget of an answer)', () => {
  it('counts a large value wherever it is, not only in the first rows', () => {
    const small = Array.from({ length: 100 }, (_, i) => ({ k: `k${i}`, n: i }));
    const withLargeLast = [...small, { k: 'x'.repeat(1_000_000), n: 0 }];
    expect(answerBytes(withLargeLast)).toBeGreaterThan(2_000_000);
    expect(answerBytes(small)).toBeLessThan(20_000);
  });

  it('grows with the rows and counts nested values', () => {
    expect(answerBytes([])).toBe(256);
    expect(answerBytes([{ a: 1 }, { a: 2 }])).toBeGreaterThan(answerBytes([{ a: 1 }]));
    expect(answerBytes([{ tags: { long: 'y'.repeat(10_000) } }])).toBeGreaterThan(20_000);
  });
});
