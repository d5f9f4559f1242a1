import { decodeAddPath, encodeAddPath, hiveEscape, partitionDirectory } from './partition';

describe('partition paths (DELTA.md §4)', () => {
  it('Hive-escapes the directory and URI-encodes add.path once more', () => {
    expect(hiveEscape('US/East')).toBe('US%2FEast');
    const dir = partitionDirectory(['region'], { region: 'US/East' });
    expect(dir).toBe('region=US%2FEast');
    expect(encodeAddPath(`${dir}/part-1.parquet`)).toBe('region=US%252FEast/part-1.parquet');
    expect(decodeAddPath('region=US%252FEast/part-1.parquet')).toBe('region=US%2FEast/part-1.parquet');
  });

  it('keeps space, } and non-ASCII raw in the directory but encodes space in add.path', () => {
    const dir = partitionDirectory(['p'], { p: 'hello world}ü' });
    expect(dir).toBe('p=hello world}ü');
    expect(encodeAddPath(dir)).toBe('p=hello%20world%7Dü');
    expect(decodeAddPath(encodeAddPath(dir))).toBe(dir);
  });

  it('escapes quotes, percent, control characters and = and maps null to the Hive default', () => {
    expect(hiveEscape(`a'b"c%d=e\n\x7f`)).toBe('a%27b%22c%25d%3De%0A%7F');
    expect(partitionDirectory(['a', 'b'], { a: null, b: 'x' })).toBe('a=__HIVE_DEFAULT_PARTITION__/b=x');
  });

  it('round-trips hostile values through encode and decode', () => {
    for (const v of ['50%', '%2F', 'a/b/../c', '[x]*?', '#frag', 'tab\tnew\nline', '名前', '`|<>^{}\\']) {
      const key = `${partitionDirectory(['p'], { p: v })}/f.parquet`;
      expect(decodeAddPath(encodeAddPath(key))).toBe(key);
      expect(key.split('/').length).toBe(2); // never a new directory level
    }
  });

  it('refuses absolute add paths and malformed encoding', () => {
    expect(() => decodeAddPath('s3://bucket/x.parquet')).toThrow(expect.objectContaining({ code: 'LAKE_UNSUPPORTED_PROTOCOL' }));
    expect(() => decodeAddPath('p=%E0%A4%A/x')).toThrow(expect.objectContaining({ code: 'LAKE_LOG_CORRUPT' }));
  });
});
