const UTF8 = new TextEncoder();

/**
 * Kafka's murmur2 (the Java client's `Utils.murmur2`, seed 0x9747b28c), as a signed 32-bit
 * integer. The same function Kafka's default partitioner and librdkafka's `murmur2_random`
 * partitioner apply to the key bytes, so a key's bucket and its Kafka partition are related.
 * `length`: hash only the first `length` bytes of `data`.
 */
export function murmur2(data: Uint8Array, length: number = data.length): number {
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const tail = length & 3;
  // Kafka's switch falls through 3 → 2 → 1; written as ifs for noFallthroughCasesInSwitch.
  if (tail === 3) h ^= data[length4 + 2] << 16;
  if (tail >= 2) h ^= data[length4 + 1] << 8;
  if (tail >= 1) {
    h ^= data[length4];
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not `Math.abs`, which fails on -2^31). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

/** UTF-8 bytes of an entity key, as they go into the Kafka message key. */
export function keyBytes(key: string): Uint8Array {
  return UTF8.encode(key);
}

/**
 * The non-negative 31-bit hash of an entity key: murmur2 of its UTF-8 bytes, sign bit cleared.
 * Its remainders are the key's Kafka partition and silver bucket; merge-compaction stores it in
 * every row (`_key_hash`) and clusters silver files by it, so a lookup can prune by it.
 */
export function keyHashOf(key: string | Uint8Array): number {
  if (typeof key !== 'string') return toPositive(murmur2(key));
  // Encoded into a reused buffer: tier 1 hashes every event's key, and a fresh
  // array per key was garbage the young generation collected at every event.
  if (key.length * 3 > scratch.length) scratch = new Uint8Array(Math.max(key.length * 3, scratch.length * 2));
  return toPositive(murmur2(scratch, UTF8.encodeInto(key, scratch).written));
}

/** keyHashOf's encoding buffer; a UTF-16 code unit is at most 3 UTF-8 bytes. */
let scratch = new Uint8Array(256);

/**
 * The Kafka partition (0 ≤ p < `partitions`) the default partitioner picks for `key`.
 * Also how silver buckets are chosen: with `buckets` a multiple of `partitions`,
 * bucket b lives in partition b % partitions, so one consumer's buckets are its own.
 */
export function partitionOf(key: string | Uint8Array, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  return keyHashOf(key) % partitions;
}

/** The silver bucket (0 ≤ b < `buckets`) of an entity key: murmur2 like Kafka's partitioner. */
export function bucketOf(key: string | Uint8Array, buckets: number): number {
  return partitionOf(key, buckets);
}
