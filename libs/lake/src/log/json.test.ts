import { parseJsonLossless, stringifyJson } from './json';

describe('lossless log JSON', () => {
  it('keeps longs beyond 2^53 exact as bigint and small numbers as numbers', () => {
    const parsed = parseJsonLossless('{"txn":{"appId":"a","version":9223372036854775807},"n":42,"f":1.5,"neg":-9007199254740993}') as { txn: { version: unknown }; n: unknown; f: unknown; neg: unknown };
    expect(parsed.txn.version).toBe(9223372036854775807n);
    expect(parsed.n).toBe(42);
    expect(parsed.f).toBe(1.5);
    expect(parsed.neg).toBe(-9007199254740993n);
  });

  it('parses texts without 16-digit runs (the JSON.parse path) to the same values as the lossless path', () => {
    const samples = [
      '{"add":{"path":"bucket=3/part-0001.parquet","size":123456789012345,"modificationTime":1796012884547,"dataChange":true,"stats":"{\\"numRecords\\":42}"}}',
      '{"txn":{"appId":"bronze:t-0","version":999999999999999},"n":-0.5,"e":1e20,"neg":-123456789012345,"s":"x\\u00e9","a":[1,2.5,null,true]}',
      '{"__proto__":{"x":1},"k":"\\"quoted\\""}',
    ];
    for (const text of samples) {
      const fast = parseJsonLossless(text);
      // Padding a string with 16 digits sends the same text down the lossless path.
      const slow = parseJsonLossless(text.replace(/}$/, ',"pad":"0000000000000000"}')) as Record<string, unknown>;
      delete slow.pad;
      expect(fast).toEqual(slow);
    }
    // Duplicate keys (invalid in a log) resolve last-wins on both paths.
    expect(parseJsonLossless('{"a":1,"a":2}')).toEqual({ a: 2 });
    expect(parseJsonLossless('{"a":1,"a":2,"pad":"0000000000000000"}')).toEqual({ a: 2, pad: '0000000000000000' });
    // 16 digits inside a string only cost the slow path; values stay exact either way.
    const big = parseJsonLossless('{"path":"f-1234567890123456.parquet","v":9007199254740993}') as { v: unknown };
    expect(big.v).toBe(9007199254740993n);
  });

  it('writes bigint as exact digits', () => {
    expect(stringifyJson({ v: 2n ** 63n - 1n, s: 'x' })).toBe('{"v":9223372036854775807,"s":"x"}');
  });

  it('rejects torn JSON', () => {
    expect(() => parseJsonLossless('{"add":{"path":"x"')).toThrow();
  });
});
