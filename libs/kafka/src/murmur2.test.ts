import { murmur2, partitionForKey, toPositive } from './murmur2';

// Expected values were produced by the Java client itself (kafka-clients 4.1.1,
// org.apache.kafka.common.utils.Utils.murmur2 / toPositive, keys UTF-8 encoded), not by this code.
const JAVA: Array<[key: string, hash: number, p12: number, p64: number]> = [
  ['', 275646681, 9, 25],
  ['a', -1563381124, 4, 60],
  ['ab', 316155434, 2, 42],
  ['abc', 479470107, 3, 27],
  ['123456789', -1822237082, 6, 38],
  ['21', -973932308, 0, 44],
  ['foobar', -790332482, 6, 62],
  ['order-42', 501153024, 0, 0],
  ['sku-0001/wh-7', 700820030, 2, 62],
  ['éè中文', 1136853271, 7, 23],
  ['a-little-bit-longer-string', -1486304829, 11, 3],
];

describe('murmur2', () => {
  it.each(JAVA)('matches Java Utils.murmur2 for %j', (key, hash, p12, p64) => {
    expect(murmur2(key)).toBe(hash);
    expect(murmur2(Buffer.from(key, 'utf8'))).toBe(hash);
    expect(partitionForKey(key, 12)).toBe(p12);
    expect(partitionForKey(key, 64)).toBe(p64);
  });

  it('toPositive clears the sign bit, including for INT_MIN', () => {
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-1)).toBe(2147483647);
    expect(toPositive(5)).toBe(5);
  });

  it('rejects a non-positive or fractional partition count', () => {
    expect(() => partitionForKey('a', 0)).toThrow(RangeError);
    expect(() => partitionForKey('a', 1.5)).toThrow(RangeError);
    expect(partitionForKey('anything', 1)).toBe(0);
  });

  it('hashes bytes that are not valid UTF-8 as raw bytes (high bit set, Java signed bytes)', () => {
    // Java: Utils.murmur2(new byte[]{(byte)0xff,(byte)0xfe,0,(byte)0x80,0x7f}) == 998457672
    expect(murmur2(Uint8Array.from([0xff, 0xfe, 0x00, 0x80, 0x7f]))).toBe(998457672);
  });
});
