import { parseJsonLossless, stringifyJson } from './json';

describe('lossless log JSON', () => {
  it('keeps longs beyond 2^53 exact as bigint and small numbers as numbers', () => {
    const parsed = parseJsonLossless('{"txn":{"appId":"a","version":9223372036854775807},"n":42,"f":1.5,"neg":-9007199254740993}') as { txn: { version: unknown }; n: unknown; f: unknown; neg: unknown };
    expect(parsed.txn.version).toBe(9223372036854775807n);
    expect(parsed.n).toBe(42);
    expect(parsed.f).toBe(1.5);
    expect(parsed.neg).toBe(-9007199254740993n);
  });

  it('writes bigint as exact digits', () => {
    expect(stringifyJson({ v: 2n ** 63n - 1n, s: 'x' })).toBe('{"v":9223372036854775807,"s":"x"}');
  });

  it('rejects torn JSON', () => {
    expect(() => parseJsonLossless('{"add":{"path":"x"')).toThrow();
  });
});
