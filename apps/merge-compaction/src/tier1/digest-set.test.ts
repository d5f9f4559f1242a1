import { randomUUID } from 'node:crypto';
import { digestOf, DigestSet, newDigest } from './digest-set';

const hex = (s: string) => Buffer.from(digestOf(s, newDigest()).buffer).toString('hex');

describe('digestOf', () => {
  it('is a function of the characters alone, whatever way the string was built', () => {
    const id = randomUUID();
    // A concatenated (cons) string, a sliced one and a flat copy of the same characters.
    const built = id.slice(0, 9) + id.slice(9);
    const sliced = `x${id}`.slice(1);
    const flat = Buffer.from(id, 'utf8').toString('utf8');
    expect(new Set([hex(id), hex(built), hex(sliced), hex(flat)]).size).toBe(1);
    expect(hex(id)).toMatch(/^[0-9a-f]{32}$/);
    expect(hex(id)).not.toBe(hex(randomUUID()));
  });

  it('tells apart strings that differ in one code unit at any position, in length, or by a trailing NUL', () => {
    const base = 'evt-0123456789abcdef-ü-😀-x';
    const seen = new Map<string, string>();
    const add = (s: string) => {
      const d = hex(s);
      expect({ s, clash: seen.get(d) }).toEqual({ s, clash: undefined });
      seen.set(d, s);
    };
    add('');
    add('\u0000');
    add('a');
    add('a\u0000');
    for (let n = 1; n <= base.length; n++) add(base.slice(0, n));
    for (let i = 0; i < base.length; i++) add(base.slice(0, i) + String.fromCharCode(base.charCodeAt(i) ^ 1) + base.slice(i + 1));
    // The two code units of a word swapped, and a unit moved into the neighbouring word's half.
    add('ba');
    add('\u0000a');
  });

  it('gives no equal digests over a million similar ids, with the low word spread evenly', () => {
    const n = 1_000_000;
    const set = new DigestSet();
    const buckets = new Uint32Array(1024);
    const d = newDigest();
    let repeats = 0;
    for (let i = 0; i < n; i++) {
      digestOf(`order-${i}`, d);
      if (!set.add(d)) repeats += 1;
      buckets[d[0] & 1023] += 1;
    }
    expect(repeats).toBe(0);
    expect(set.size).toBe(n);
    // ~977 per bucket; a poor mix of the counter's digits would leave buckets far off that.
    expect(Math.min(...buckets)).toBeGreaterThan(800);
    expect(Math.max(...buckets)).toBeLessThan(1150);
  });
});

describe('DigestSet', () => {
  it('adds, finds and refuses repeats across growth, matching a Set of the strings', () => {
    const set = new DigestSet();
    const truth = new Set<string>();
    const d = newDigest();
    const wrong: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const id = `e${(i * 7919) % 15_000}`;
      if (set.add(digestOf(id, d)) === truth.has(id)) wrong.push(`add ${id}`);
      truth.add(id);
    }
    expect(set.size).toBe(truth.size);
    for (let i = 0; i < 30_000; i++) if (set.has(digestOf(`e${i}`, d)) !== i < 15_000) wrong.push(`has e${i}`);
    expect(wrong).toEqual([]);
    // 15 000 digests at ≤ 70 % load: 32 768 slots of 16 bytes, not more.
    expect(set.bytes).toBe(32_768 * 16);
  });

  it('holds the all-zero digest, which marks free slots, on the side', () => {
    const set = new DigestSet();
    const zero = newDigest();
    expect(set.has(zero)).toBe(false);
    expect(set.add(zero)).toBe(true);
    expect(set.add(zero)).toBe(false);
    expect(set.has(zero)).toBe(true);
    expect(set.size).toBe(1);
    const other = Uint32Array.of(0, 0, 0, 1);
    expect(set.has(other)).toBe(false);
    expect(set.add(other)).toBe(true);
    expect(set.size).toBe(2);
  });

  it('keeps digests that share a probe start apart', () => {
    const set = new DigestSet();
    // Same low word, so the same home slot: linear probing must keep all of them.
    const ds = Array.from({ length: 40 }, (_, i) => Uint32Array.of(5, i, 0, 1));
    for (const x of ds) expect(set.add(x)).toBe(true);
    for (const x of ds) expect(set.has(x)).toBe(true);
    expect(set.has(Uint32Array.of(5, 99, 0, 1))).toBe(false);
  });
});
