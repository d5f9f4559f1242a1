import avro from 'avsc';
import type { AnyContract } from '../contract';
import { issue, type Result } from '../reasons';
import { canonicalForm, fingerprint64 } from './fingerprint';
import type { AvroRecord, AvroSchema } from './schema';

/** First byte of the Confluent wire format, followed by a 4-byte big-endian schema id. */
export const CONFLUENT_MAGIC = 0x00;
/** Length of the Confluent header (magic + schema id). */
export const CONFLUENT_HEADER_LENGTH = 5;
/** The two marker bytes of Avro single-object encoding, followed by an 8-byte LE fingerprint. */
export const SINGLE_OBJECT_MAGIC = Object.freeze([0xc3, 0x01] as const);
/** Length of the single-object header (marker + CRC-64-AVRO fingerprint). */
export const SINGLE_OBJECT_HEADER_LENGTH = 10;

const types = new WeakMap<object, avro.Type>();

/** The avsc Type of a schema, parsed once per schema object. */
export function avroTypeOf(schema: AvroSchema | object): avro.Type {
  if (typeof schema === 'string') return avro.Type.forSchema(schema);
  let type = types.get(schema);
  if (type === undefined) {
    type = avro.Type.forSchema(schema as avro.Schema);
    types.set(schema, type);
  }
  return type;
}

/** A 64-bit fingerprint as 16 lower-case hex digits. */
export function hex64(fp: bigint): string {
  return fp.toString(16).padStart(16, '0');
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The Avro binary body of a value (no header). The value must already be valid for the schema
 * (validated events are); avsc throws otherwise, which is a bug in the caller, not bad input.
 */
export function encodeAvroBody(schema: AvroSchema, value: unknown): Buffer {
  return avroTypeOf(schema).toBuffer(value);
}

/** Which framing a message uses, read from its first bytes without decoding the body. */
export type Framing =
  | { readonly kind: 'confluent'; readonly schemaId: number }
  | { readonly kind: 'single-object'; /** CRC-64-AVRO, 16 lower-case hex digits. */ readonly fingerprint: string };

/** Reads the Avro framing header of `bytes`, or undefined when it is neither known framing. */
export function readFraming(bytes: Uint8Array): Framing | undefined {
  if (bytes.length >= CONFLUENT_HEADER_LENGTH && bytes[0] === CONFLUENT_MAGIC) {
    return { kind: 'confluent', schemaId: asBuffer(bytes).readUInt32BE(1) };
  }
  if (bytes.length >= SINGLE_OBJECT_HEADER_LENGTH && bytes[0] === SINGLE_OBJECT_MAGIC[0] && bytes[1] === SINGLE_OBJECT_MAGIC[1]) {
    return { kind: 'single-object', fingerprint: hex64(asBuffer(bytes).readBigUInt64LE(2)) };
  }
  return undefined;
}

// Messages are encoded straight into a shared slab and handed out as views of it, as Node's own
// Buffer pool does for small allocations: no copy per message. A full slab is left to the views
// that still hold it and a new one is started.
const SLAB_BYTES = 64 * 1024;
let slab = Buffer.allocUnsafe(SLAB_BYTES);
let slabUsed = 0;

function encodeFramed(schema: AvroSchema, value: unknown, header: Buffer): Buffer {
  const type = avroTypeOf(schema);
  for (;;) {
    header.copy(slab, slabUsed);
    const end = header.length + slabUsed > slab.length ? -1 : type.encode(value, slab, slabUsed + header.length);
    if (end >= 0) {
      const message = slab.subarray(slabUsed, end);
      slabUsed = end;
      return message;
    }
    // Did not fit (avsc returns minus the missing byte count, so the message needs
    // slab.length - end - slabUsed bytes): a fresh slab, as large as the message if larger.
    slab = Buffer.allocUnsafe(Math.max(SLAB_BYTES, slab.length - end - slabUsed));
    slabUsed = 0;
  }
}

const singleObjectHeaders = new WeakMap<object, Buffer>();

/** Avro single-object encoding: 0xC3 0x01, the schema's CRC-64-AVRO fingerprint (LE), the body. */
export function encodeSingleObject(schema: AvroRecord, value: unknown): Buffer {
  let header = singleObjectHeaders.get(schema);
  if (header === undefined) {
    header = Buffer.alloc(SINGLE_OBJECT_HEADER_LENGTH);
    header[0] = SINGLE_OBJECT_MAGIC[0];
    header[1] = SINGLE_OBJECT_MAGIC[1];
    header.writeBigUInt64LE(fingerprintOf(schema), 2);
    singleObjectHeaders.set(schema, header);
  }
  return encodeFramed(schema, value, header);
}

/** Confluent wire format: 0x00, the registry schema id (4 bytes BE), the body. */
export function encodeConfluent(schemaId: number, schema: AvroRecord, value: unknown): Buffer {
  if (!Number.isInteger(schemaId) || schemaId < 0 || schemaId > 0xffffffff) throw new RangeError(`schema id out of range: ${schemaId}`);
  const header = Buffer.alloc(CONFLUENT_HEADER_LENGTH);
  header[0] = CONFLUENT_MAGIC;
  header.writeUInt32BE(schemaId, 1);
  return encodeFramed(schema, value, header);
}

const fingerprints = new WeakMap<object, bigint>();

/** CRC-64-AVRO fingerprint of a schema object, computed once per object. */
export function fingerprintOf(schema: AvroRecord): bigint {
  let fp = fingerprints.get(schema);
  if (fp === undefined) {
    fp = fingerprint64(schema);
    fingerprints.set(schema, fp);
  }
  return fp;
}

/** A decoded Avro message: the contract, the value in the contract's latest shape, the writer. */
export interface AvroDecoded {
  readonly contract: AnyContract;
  /** The event read through the contract's latest schema (older/newer writers resolved). */
  readonly event: unknown;
  readonly framing: Framing;
  /** The repository version of the writer schema, when the writer is one of the contract's versions. */
  readonly writerVersion: number | undefined;
}

interface Writer {
  readonly contract: AnyContract;
  readonly schema: object;
  readonly type: avro.Type;
  readonly writerVersion: number | undefined;
  /** undefined when writer and reader have the same canonical form (no resolution needed). */
  readonly resolver: avro.Resolver | undefined;
}

/**
 * Decodes Avro messages in either framing into events of the reader contract's latest schema.
 * Knows every version of the given contracts by fingerprint (single-object needs no registry);
 * Confluent schema ids are taught with {@link AvroDecoder.addSchemaId} (from the registry).
 * `decode` never throws on input.
 */
export class AvroDecoder {
  private readonly byFingerprint = new Map<string, Writer>();
  private readonly byId = new Map<number, Writer>();

  constructor(contracts: readonly AnyContract[]) {
    for (const contract of contracts) {
      for (const v of contract.versions) this.byFingerprint.set(hex64(fingerprintOf(v.schema)), this.writer(contract, v.schema));
    }
  }

  /**
   * Teaches the decoder a registry schema id and the writer schema it stands for. Throws when
   * the schema is not valid Avro or the contract's latest schema cannot resolve it.
   */
  addSchemaId(schemaId: number, contract: AnyContract, writerSchema: AvroSchema | object | string): void {
    const schema = typeof writerSchema === 'string' ? (JSON.parse(writerSchema) as object) : writerSchema;
    // avsc reads (or skips) an array or map block item by item for as many items as the bytes
    // claim, without checking them against the bytes left: 67 hostile bytes claiming 2^62 items
    // held the event loop for ever. No contract has such a field, so a writer that does is
    // refused rather than trusted.
    const writerTypes = typeNamesOf(schema);
    const contractTypes = new Set(contract.versions.flatMap((v) => [...typeNamesOf(v.schema)]));
    if (!contractTypes.has('array') && !contractTypes.has('map') && (writerTypes.has('array') || writerTypes.has('map'))) {
      throw new Error(`a writer schema of ${contract.name} with an array or map field is not accepted (no version of the contract has one)`);
    }
    // Avro resolves a writer's bytes into a reader's string, and avsc turns the bytes into text
    // leniently: an invalid sequence would become U+FFFD without a word, past stringsIntact
    // (which checks the writer's strings). No contract has a bytes field, so a writer that does
    // is refused rather than trusted.
    if (!contractTypes.has('bytes') && writerTypes.has('bytes')) {
      throw new Error(`a writer schema of ${contract.name} with a bytes field is not accepted (no version of the contract has one; its strings are strings)`);
    }
    this.byId.set(schemaId, this.writer(contract, schema));
  }

  /** True when the id was taught with {@link addSchemaId}. */
  knowsSchemaId(schemaId: number): boolean {
    return this.byId.has(schemaId);
  }

  /** Decodes one framed message. */
  decode(bytes: Uint8Array): Result<AvroDecoded> {
    const located = this.locate(bytes);
    if (!located.ok) return located;
    const { writer, framing, body } = located.value;
    try {
      const reader = avroTypeOf(writer.contract.latest.schema);
      const event = writer.resolver === undefined ? reader.fromBuffer(body) : reader.fromBuffer(body, writer.resolver);
      return { ok: true, value: { contract: writer.contract, event, framing, writerVersion: writer.writerVersion } };
    } catch (err) {
      return { ok: false, issues: [issue('AVRO_DECODE_FAILED', '', `body does not decode: ${(err as Error).message.slice(0, 200)}`)] };
    }
  }

  /**
   * For a message that decodes: whether its strings are valid UTF-8. avsc decodes strings
   * leniently (an invalid sequence becomes U+FFFD, silently), so the body is decoded again with
   * the writer schema's strings read as bytes and checked strictly. Costs a second decode: for
   * messages whose decoded strings hold U+FFFD. A schema the swap cannot cover (map keys are
   * strings too) is judged by re-encoding instead, which also refuses a legal but non-minimal
   * length prefix.
   */
  stringsIntact(bytes: Uint8Array): boolean {
    const located = this.locate(bytes);
    if (!located.ok) return false;
    const { writer, body } = located.value;
    try {
      const strict = strictStringsTypeOf(writer.schema);
      if (strict !== undefined) {
        strict.fromBuffer(body);
        return true;
      }
      return writer.type.toBuffer(writer.type.fromBuffer(body)).equals(body);
    } catch {
      return false;
    }
  }

  /** The framing, known writer and body of a message, or the issue why not. */
  private locate(bytes: Uint8Array): Result<{ framing: Framing; writer: Writer; body: Buffer }> {
    const framing = readFraming(bytes);
    if (framing === undefined) {
      return { ok: false, issues: [issue('AVRO_FRAMING_UNKNOWN', '', 'first bytes are neither 0x00 (Confluent) nor 0xC3 0x01 (single-object)')] };
    }
    const writer = framing.kind === 'confluent' ? this.byId.get(framing.schemaId) : this.byFingerprint.get(framing.fingerprint);
    if (writer === undefined) {
      const id = framing.kind === 'confluent' ? `schema id ${framing.schemaId}` : `fingerprint ${framing.fingerprint}`;
      return { ok: false, issues: [issue('AVRO_WRITER_UNKNOWN', '', `no known writer schema for ${id}`)] };
    }
    const headerLength = framing.kind === 'confluent' ? CONFLUENT_HEADER_LENGTH : SINGLE_OBJECT_HEADER_LENGTH;
    return { ok: true, value: { framing, writer, body: asBuffer(bytes).subarray(headerLength) } };
  }

  private writer(contract: AnyContract, schema: object): Writer {
    const type = avroTypeOf(schema);
    const reader = avroTypeOf(contract.latest.schema);
    const canonical = canonicalForm(schema);
    const same = canonical === canonicalForm(contract.latest.schema);
    const version = contract.versions.find((v) => canonicalForm(v.schema) === canonical)?.version;
    return { contract, schema, type, writerVersion: version, resolver: same ? undefined : resolverOf(reader, type) };
  }
}

/**
 * Reads a value written with `writer` as a value of `reader` (Avro schema resolution: fields the
 * reader lacks are dropped, fields the writer lacks take the reader's default). Throws when the
 * schemas cannot be resolved — a programming error, checked by the schema gate before shipping.
 */
export function resolveValue(writer: AvroSchema, reader: AvroSchema, value: unknown): unknown {
  const writerType = avroTypeOf(writer);
  const readerType = avroTypeOf(reader);
  return readerType.fromBuffer(writerType.toBuffer(value), resolverOf(readerType, writerType));
}

type Resolver = ReturnType<avro.Type['createResolver']>;
const resolvers = new WeakMap<avro.Type, WeakMap<avro.Type, Resolver>>();

/**
 * avsc's resolver that reads `writer` values as `reader` values, built once per pair: building
 * one walks both schemas and generates code, and cost a tenth of ingest's and validate's CPU
 * when it ran per event of an older contract version.
 */
export function resolverOf(reader: avro.Type, writer: avro.Type): Resolver {
  let byWriter = resolvers.get(reader);
  if (byWriter === undefined) {
    byWriter = new WeakMap();
    resolvers.set(reader, byWriter);
  }
  let resolver = byWriter.get(writer);
  if (resolver === undefined) {
    resolver = reader.createResolver(writer);
    byWriter.set(writer, resolver);
  }
  return resolver;
}

/** Every type name an Avro schema (JSON form) uses anywhere: primitives, `array`, `map`, `record`, …. */
function typeNamesOf(schema: unknown, out = new Set<string>(), seen = new Set<unknown>()): Set<string> {
  if (typeof schema === 'string') out.add(schema);
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return out;
  seen.add(schema);
  if (Array.isArray(schema)) {
    for (const branch of schema) typeNamesOf(branch, out, seen);
    return out;
  }
  const s = schema as { type?: unknown; fields?: unknown; items?: unknown; values?: unknown };
  typeNamesOf(s.type, out, seen);
  if (s.items !== undefined) typeNamesOf(s.items, out, seen);
  if (s.values !== undefined) typeNamesOf(s.values, out, seen);
  if (Array.isArray(s.fields)) for (const f of s.fields) typeNamesOf((f as { type?: unknown })?.type, out, seen);
  return out;
}

/** Logical type name of a string read as bytes and refused unless valid UTF-8. */
const STRICT_UTF8 = 'sluice-strict-utf8';

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes that must be valid UTF-8: decoding throws otherwise. Used for checks only, never to encode. */
class StrictUtf8 extends avro.types.LogicalType {
  override _fromValue(value: unknown): unknown {
    return fatalUtf8.decode(value as Buffer); // throws a TypeError on any invalid sequence
  }

  override _toValue(value: unknown): unknown {
    return value;
  }
}

/** Per writer schema: its type with every string read through {@link StrictUtf8}, or null when the swap does not cover it. */
const strictStringTypes = new WeakMap<object, avro.Type | null>();

/** The writer schema's type whose decode throws on a string that is not valid UTF-8; undefined where it cannot be built. */
function strictStringsTypeOf(schema: object): avro.Type | undefined {
  let type = strictStringTypes.get(schema);
  if (type === undefined) {
    const swapped = stringsAsStrictBytes(schema);
    try {
      type = swapped === undefined ? null : avro.Type.forSchema(swapped as avro.Schema, { logicalTypes: { [STRICT_UTF8]: StrictUtf8 } });
    } catch {
      type = null; // e.g. a union with both a string and a bytes branch: no longer a valid union
    }
    strictStringTypes.set(schema, type);
  }
  return type ?? undefined;
}

/**
 * A copy of a schema with every `string` (same binary encoding as `bytes`) as strictly checked
 * bytes; undefined when it holds a map, whose keys are strings the swap cannot reach.
 */
function stringsAsStrictBytes(schema: unknown): unknown {
  if (schema === 'string') return { type: 'bytes', logicalType: STRICT_UTF8 };
  if (typeof schema === 'string') return schema; // another primitive or a named reference
  if (Array.isArray(schema)) {
    const branches = schema.map(stringsAsStrictBytes);
    return branches.includes(undefined) ? undefined : branches;
  }
  if (schema === null || typeof schema !== 'object') return undefined;
  const s = schema as Record<string, unknown>;
  if (s.type === 'map') return undefined;
  if (s.type === 'string') return stringsAsStrictBytes('string');
  const out: Record<string, unknown> = { ...s };
  if (typeof s.type === 'object' && s.type !== null) {
    out.type = stringsAsStrictBytes(s.type);
    if (out.type === undefined) return undefined;
  }
  if (s.type === 'array') {
    out.items = stringsAsStrictBytes(s.items);
    if (out.items === undefined) return undefined;
  }
  if (s.type === 'record' || s.type === 'error') {
    if (!Array.isArray(s.fields)) return undefined;
    const fields = [];
    for (const f of s.fields as Record<string, unknown>[]) {
      const type = stringsAsStrictBytes(f?.type);
      if (type === undefined) return undefined;
      const { default: _unused, ...rest } = f; // defaults play no part in a decode
      fields.push({ ...rest, type });
    }
    out.fields = fields;
  }
  return out;
}

/** A check whether a decoded value holds U+FFFD in any of its text, one per reader schema. */
const replacementChecks = new WeakMap<object, (value: unknown) => boolean>();

/**
 * Whether any text of `value`, decoded with `schema`, holds U+FFFD (the mark of avsc's lenient
 * UTF-8 decoding). Compiled per schema to read just its string fields (a generic walk over every
 * value cost a fifth of an Avro event's decode and check); a schema with types this does not
 * follow (named references, arrays, maps) gets the generic walk.
 */
export function holdsReplacementChar(schema: object, value: unknown): boolean {
  let check = replacementChecks.get(schema);
  if (check === undefined) {
    const paths = stringPaths(schema, []);
    check = paths === undefined ? walkForReplacementChar : compileReplacementCheck(paths);
    replacementChecks.set(schema, check);
  }
  return check(value);
}

/** The paths of a record schema's string fields (through nested records and unions); undefined when it has other shapes. */
function stringPaths(schema: unknown, at: readonly string[]): string[][] | undefined {
  if (schema === 'string') return [[...at]];
  if (typeof schema === 'string') return PRIMITIVES.has(schema) ? [] : undefined;
  if (Array.isArray(schema)) {
    // avsc hands a union with two non-null branches back wrapped ({"string": "…"}): not a path
    // of plain strings, so such a schema gets the walk over every value.
    if (schema.filter((b) => b !== 'null').length > 1) return undefined;
    const out: string[][] = [];
    for (const branch of schema) {
      const paths = stringPaths(branch, at);
      if (paths === undefined) return undefined;
      out.push(...paths);
    }
    return out;
  }
  if (schema === null || typeof schema !== 'object') return undefined;
  const s = schema as { type?: unknown; fields?: unknown };
  if (s.type === 'record' && Array.isArray(s.fields)) {
    const out: string[][] = [];
    for (const f of s.fields as { name?: unknown; type?: unknown }[]) {
      if (typeof f?.name !== 'string') return undefined;
      const paths = stringPaths(f.type, [...at, f.name]);
      if (paths === undefined) return undefined;
      out.push(...paths);
    }
    return out;
  }
  if (s.type === 'enum' || s.type === 'fixed') return [];
  return typeof s.type === 'string' ? stringPaths(s.type, at) : undefined;
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes']);

/** Generated code reading each string path once (names enter the code only as JSON literals). */
function compileReplacementCheck(paths: readonly string[][]): (value: unknown) => boolean {
  if (paths.length === 0) return () => false;
  const tests = paths.map((p) => `(typeof (x = v${p.map((n) => `?.[${JSON.stringify(n)}]`).join('')}) === 'string' && x.indexOf('\\ufffd') >= 0)`);
  return new Function('v', `let x; return ${tests.join(' || ')};`) as (value: unknown) => boolean;
}

function walkForReplacementChar(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\ufffd');
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(walkForReplacementChar);
  for (const v of Object.values(value)) if (walkForReplacementChar(v)) return true;
  return false;
}

