import { ResultCache, canonicalJson } from './result-cache';

describe('ResultCache', () => {
  it('evicts the least recently used entry past maxEntries', () => {
    const c = new ResultCache<number>(2, 1e9);
    c.set('a', 1, 10);
    c.set('b', 2, 10);
    expect(c.get('a')).toBe(1); // a is now the most recent
    c.set('c', 3, 10);
    expect(c.get('b')).toBeUndefined();
    expect(c.get('a')).toBe(1);
    expect(c.get('c')).toBe(3);
  });

  it('stays within its byte budget and skips oversized answers', () => {
    const c = new ResultCache<string>(100, 1000);
    for (let i = 0; i < 50; i++) c.set(`k${i}`, 'v', 100);
    expect(c.totalBytes).toBeLessThanOrEqual(1000);
    expect(c.size).toBe(10);
    c.set('huge', 'v', 300);
    expect(c.get('huge')).toBeUndefined();
  });

  it('replacing a key does not double-count its bytes', () => {
    const c = new ResultCache<string>(10, 1000);
    c.set('a', 'x', 100);
    c.set('a', 'y', 200);
    expect(c.totalBytes).toBe(200);
    expect(c.get('a')).toBe('y');
  });

  it('is disabled with zero entries', () => {
    const c = new ResultCache<string>(0, 1000);
    c.set('a', 'x', 1);
    expect(c.get('a')).toBeUndefined();
  });
});

describe('canonicalJson', () => {
  it('ignores key order and undefined members but not array order', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 1, c: undefined }] })).toBe(canonicalJson({ a: [2, { d: 1 }], b: 1 }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });
});
