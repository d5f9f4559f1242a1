/**
 * A set of 128-bit string digests in one typed array: the dedup window's memory for event ids.
 *
 * A `Set<string>` of 36-character event ids costs about 80 bytes per id on the V8 heap (the
 * string plus the table entry), and every id is an object the garbage collector marks on each
 * major GC. Here an id costs its 16-byte digest in a flat `Uint32Array` at 35–70 % load (23–46
 * bytes, 35 measured for a million ids), and the collector sees one object per set.
 *
 * Two different ids are taken for the same one only if their 128-bit digests are equal: for n ids
 * held at once the chance is about n² / 2¹²⁹ (10⁻²³ for 100 million ids), far below the
 * storage's own silent-error rate. The digest is not cryptographic: a producer could craft an id
 * colliding with another producer's id, but only knowing that id in advance, and then it can
 * as well send the id itself, which dedup trusts anyway (docs/design/merge-compaction.md,
 * invariant 2). SHA-256 costs ~20× this per id (~10 % of tier 1's CPU), for no gain there.
 */

/** Words per digest. */
const WORDS = 4;
const MIN_SLOTS = 64;
const MAX_LOAD = 0.7;

/** A digest: four 32-bit words. */
export type Digest = Uint32Array;

export function newDigest(): Digest {
  return new Uint32Array(WORDS);
}

/**
 * Writes the 128-bit digest of `s` into `out`. The mixing is MurmurHash3 x86_128's, fed with the
 * string's UTF-16 code units two to a 32-bit word (8 per block) instead of UTF-8 bytes: the value
 * is only ever compared in memory, never stored, so it need not match other implementations.
 */
export function digestOf(s: string, out: Digest): Digest {
  const c1 = 0x239b961b;
  const c2 = 0xab0e9789;
  const c3 = 0x38b34ae5;
  const c4 = 0xa1e38b93;
  const n = s.length;
  let h1 = 0x9747b28c;
  let h2 = h1;
  let h3 = h1;
  let h4 = h1;
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    let k1 = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    let k2 = s.charCodeAt(i + 2) | (s.charCodeAt(i + 3) << 16);
    let k3 = s.charCodeAt(i + 4) | (s.charCodeAt(i + 5) << 16);
    let k4 = s.charCodeAt(i + 6) | (s.charCodeAt(i + 7) << 16);
    k1 = Math.imul(rotl(Math.imul(k1, c1), 15), c2);
    h1 ^= k1;
    h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0;
    k2 = Math.imul(rotl(Math.imul(k2, c2), 16), c3);
    h2 ^= k2;
    h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0;
    k3 = Math.imul(rotl(Math.imul(k3, c3), 17), c4);
    h3 ^= k3;
    h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0;
    k4 = Math.imul(rotl(Math.imul(k4, c4), 18), c1);
    h4 ^= k4;
    h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0;
  }
  // Tail: up to 7 code units in up to 4 words (an odd last unit fills the low half of a word).
  const rest = n - i;
  if (rest > 6) h4 ^= Math.imul(rotl(Math.imul(wordAt(s, i + 6, n), c4), 18), c1);
  if (rest > 4) h3 ^= Math.imul(rotl(Math.imul(wordAt(s, i + 4, n), c3), 17), c4);
  if (rest > 2) h2 ^= Math.imul(rotl(Math.imul(wordAt(s, i + 2, n), c2), 16), c3);
  if (rest > 0) h1 ^= Math.imul(rotl(Math.imul(wordAt(s, i, n), c1), 15), c2);
  // The length in bytes tells "a" from "a\u0000".
  const bytes = n * 2;
  h1 ^= bytes;
  h2 ^= bytes;
  h3 ^= bytes;
  h4 ^= bytes;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  out[0] = h1;
  out[1] = h2 + h1;
  out[2] = h3 + h1;
  out[3] = h4 + h1;
  return out;
}

/** Code units i and i+1 as one word (the last unit alone when i+1 is past the end). */
function wordAt(s: string, i: number, n: number): number {
  return i + 1 < n ? s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16) : s.charCodeAt(i);
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** An open-addressing (linear probing) hash set of digests. The all-zero digest is kept aside, as zero marks a free slot. */
export class DigestSet {
  private slots = new Uint32Array(MIN_SLOTS * WORDS);
  private mask = MIN_SLOTS - 1;
  private count = 0;
  private hasZero = false;

  get size(): number {
    return this.count + (this.hasZero ? 1 : 0);
  }

  /** Bytes of the slot array (what the set holds beyond a few fields). */
  get bytes(): number {
    return this.slots.byteLength;
  }

  has(d: Digest): boolean {
    if (isFree(d, 0)) return this.hasZero;
    return this.find(this.slots, this.mask, d) >= 0;
  }

  /** Adds `d`; false when it was already held. */
  add(d: Digest): boolean {
    if (isFree(d, 0)) {
      const added = !this.hasZero;
      this.hasZero = true;
      return added;
    }
    if (this.find(this.slots, this.mask, d) >= 0) return false;
    if (this.count + 1 > (this.mask + 1) * MAX_LOAD) this.grow();
    insert(this.slots, this.mask, d, 0);
    this.count += 1;
    return true;
  }

  /** Slot index of `d`, or −1. */
  private find(slots: Uint32Array, mask: number, d: Digest): number {
    for (let slot = d[0] & mask; ; slot = (slot + 1) & mask) {
      const at = slot * WORDS;
      if (isFree(slots, at)) return -1;
      if (slots[at] === d[0] && slots[at + 1] === d[1] && slots[at + 2] === d[2] && slots[at + 3] === d[3]) return slot;
    }
  }

  private grow(): void {
    const old = this.slots;
    const capacity = (this.mask + 1) * 2;
    this.slots = new Uint32Array(capacity * WORDS);
    this.mask = capacity - 1;
    for (let at = 0; at < old.length; at += WORDS) {
      if (!isFree(old, at)) insert(this.slots, this.mask, old, at);
    }
  }
}

/** True when the four words at `at` are all zero: a free slot, or the all-zero digest. */
function isFree(words: Uint32Array, at: number): boolean {
  return words[at] === 0 && words[at + 1] === 0 && words[at + 2] === 0 && words[at + 3] === 0;
}

/** Puts the digest at `src[from..from+4)` into the first free slot of its probe sequence. */
function insert(slots: Uint32Array, mask: number, src: Uint32Array, from: number): void {
  let slot = src[from] & mask;
  while (!isFree(slots, slot * WORDS)) slot = (slot + 1) & mask;
  const at = slot * WORDS;
  slots[at] = src[from];
  slots[at + 1] = src[from + 1];
  slots[at + 2] = src[from + 2];
  slots[at + 3] = src[from + 3];
}
