/**
 * A list of byte strings (some absent) as one buffer and an array of end offsets, so a batch's
 * values cross to a worker thread as two transferable arrays instead of thousands of cloned
 * Buffers. `ends[i]` is where item i ends, or -1 when it is absent; it starts where the previous
 * present item ended.
 */
export interface PackedBytes {
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly ends: Int32Array<ArrayBuffer>;
}

/** The memory of packed lists, to transfer with them (`postMessage`'s transfer list). */
export function transferablesOf(...packed: readonly PackedBytes[]): ArrayBuffer[] {
  return packed.flatMap((p) => [p.bytes.buffer, p.ends.buffer]);
}

/** Packs `items` in order (null and undefined stay absent). */
export function packBytes(items: readonly (Uint8Array | null | undefined)[]): PackedBytes {
  let total = 0;
  for (const item of items) if (item) total += item.length;
  const bytes = new Uint8Array(total);
  const ends = new Int32Array(items.length);
  let at = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!item) {
      ends[i] = -1;
      continue;
    }
    bytes.set(item, at);
    at += item.length;
    ends[i] = at;
  }
  return { bytes, ends };
}

/**
 * The items of a {@link PackedBytes} as Buffers over its memory (no copy), undefined where absent.
 * The Buffers share the packed memory: they stay valid as long as it is not reused.
 */
export function unpackBytes(packed: PackedBytes): (Buffer | undefined)[] {
  const { bytes, ends } = packed;
  const out: (Buffer | undefined)[] = new Array(ends.length);
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    const end = ends[i];
    if (end < 0) {
      out[i] = undefined;
      continue;
    }
    out[i] = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
    start = end;
  }
  return out;
}
