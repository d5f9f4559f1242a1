/**
 * Kafka's default key partitioner, bit-for-bit the Java client's `Utils.murmur2` +
 * `Utils.toPositive(h) % numPartitions`. librdkafka's `murmur2_random` partitioner (which
 * every producer of this lib is configured with) computes the same function, so the partition
 * a key lands on, and the silver bucket derived from the same hash, agree across languages.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Java `Utils.murmur2`: the signed 32-bit murmur2 hash of `data` (strings are UTF-8 encoded). */
export function murmur2(data: Uint8Array | string): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const length = bytes.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // Java's switch falls through: 3 → 2 → 1, then multiplies once.
  const rest = length & 3;
  if (rest === 3) h ^= bytes[whole + 2] << 16;
  if (rest >= 2) h ^= bytes[whole + 1] << 8;
  if (rest >= 1) {
    h ^= bytes[whole];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Java `Utils.toPositive`: clears the sign bit (not `Math.abs`, which breaks on INT_MIN). */
export function toPositive(hash: number): number {
  return hash & 0x7fffffff;
}

/**
 * The partition (0 ≤ p < numPartitions) Kafka's default partitioner picks for a non-null key.
 * Null keys are spread randomly by the producer and have no fixed partition.
 */
export function partitionForKey(key: Uint8Array | string, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return toPositive(murmur2(key)) % numPartitions;
}
