import { bucketOf, keyHashOf, murmur2, partitionOf, toPositive } from './murmur2';

const bytes = (s: string) => new TextEncoder().encode(s);

describe('murmur2', () => {
  // Vectors from Apache Kafka's UtilsTest.testMurmur2 (clients/src/test/.../UtilsTest.java).
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('hashes %s like Kafka', (input, expected) => {
    expect(murmur2(bytes(input))).toBe(expected);
  });

  it('clears the sign bit instead of taking abs (Integer.MIN_VALUE stays in range)', () => {
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-1)).toBe(2147483647);
  });

  it('maps a bucket to the partition of the same key when buckets is a multiple of partitions', () => {
    for (let i = 0; i < 500; i++) {
      const key = `order-${i}`;
      expect(bucketOf(key, 32) % 8).toBe(partitionOf(key, 8));
    }
  });

  it('rejects a non-positive partition count', () => {
    expect(() => partitionOf('a', 0)).toThrow(RangeError);
  });
});

describe('keyHashOf', () => {
  it('is the positive murmur2 whose remainders are the partition and the bucket', () => {
    for (const key of ['order-1', 'abc', '', 'ünïcødé 🙂', 'lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8']) {
      const h = keyHashOf(key);
      expect(h).toBe(toPositive(murmur2(bytes(key))));
      expect(h).toBeGreaterThanOrEqual(0);
      expect(keyHashOf(bytes(key))).toBe(h);
      expect(partitionOf(key, 12)).toBe(h % 12);
      expect(bucketOf(key, 32)).toBe(h % 32);
    }
  });

  it('hashes keys longer than its encoding buffer, and short keys after them, as their UTF-8 bytes', () => {
    const keys = ['k'.repeat(5000), 'ü'.repeat(3000) + '🙂'.repeat(700), 'order-1', 'ab', '🙂'];
    for (const key of [...keys, ...keys]) expect(keyHashOf(key)).toBe(toPositive(murmur2(bytes(key))));
  });
});
