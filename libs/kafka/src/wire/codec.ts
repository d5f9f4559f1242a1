/**
 * The Kafka wire protocol's primitive types (big-endian integers, int16-length strings,
 * int32-length bytes and arrays), for the few requests the admin speaks itself
 * (admin/config-protocol.ts) and the SASL exchange before them (connection.ts). Only the
 * non-flexible encodings are here: every request used is sent in a version that predates them.
 */

/** Builds a request body. */
export class Writer {
  private readonly parts: Buffer[] = [];
  int8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    this.parts.push(b);
    return this;
  }
  int16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }
  int32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  string(v: string | null): this {
    if (v === null) return this.int16(-1);
    const bytes = Buffer.from(v, 'utf8');
    this.int16(bytes.length);
    this.parts.push(bytes);
    return this;
  }
  /** Kafka BYTES: an int32 length, then the bytes. */
  bytes(v: Buffer): this {
    this.int32(v.length);
    this.parts.push(v);
    return this;
  }
  array<T>(items: readonly T[] | null, write: (w: this, item: T) => void): this {
    if (items === null) return this.int32(-1);
    this.int32(items.length);
    for (const item of items) write(this, item);
    return this;
  }
  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** Reads a response body; a read past its end throws RangeError. */
export class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}
  int8(): number {
    return this.buf.readInt8(this.advance(1));
  }
  bool(): boolean {
    return this.int8() !== 0;
  }
  int16(): number {
    return this.buf.readInt16BE(this.advance(2));
  }
  int32(): number {
    return this.buf.readInt32BE(this.advance(4));
  }
  string(): string | null {
    const len = this.int16();
    if (len < 0) return null;
    const start = this.advance(len);
    return this.buf.toString('utf8', start, start + len);
  }
  int64(): bigint {
    return this.buf.readBigInt64BE(this.advance(8));
  }
  /** Kafka nullable BYTES (length -1 = null). */
  bytes(): Buffer | null {
    const len = this.int32();
    if (len < 0) return null;
    const start = this.advance(len);
    return this.buf.subarray(start, start + len);
  }
  array<T>(read: (r: Reader) => T): T[] {
    const n = this.int32();
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(read(this));
    return out;
  }
  private advance(n: number): number {
    if (this.pos + n > this.buf.length) throw new RangeError('truncated Kafka response');
    const at = this.pos;
    this.pos += n;
    return at;
  }
}
