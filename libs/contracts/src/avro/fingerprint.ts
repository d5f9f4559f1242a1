import avro from 'avsc';
import type { AvroSchema } from './schema';

const EMPTY = 0xc15d213aa4d7a795n;
const MASK64 = 0xffffffffffffffffn;

const TABLE: bigint[] = (() => {
  const table: bigint[] = [];
  for (let i = 0n; i < 256n; i++) {
    let fp = i;
    for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY & (-(fp & 1n) & MASK64));
    table.push(fp);
  }
  return table;
})();

/**
 * The Parsing Canonical Form of a schema (Avro spec): full names, only the attributes that
 * matter for reading, fixed key order, no whitespace. Two schemas with the same canonical form
 * read and write the same bytes.
 */
export function canonicalForm(schema: AvroSchema | object | string): string {
  return JSON.stringify(avro.Type.forSchema(schema as avro.Schema).schema());
}

/**
 * CRC-64-AVRO (Rabin) fingerprint of a schema's canonical form, as an unsigned 64-bit bigint —
 * the id Avro single-object encoding puts in its header. Java's `SchemaNormalization
 * .parsingFingerprint64` returns the same bits as a signed long.
 */
export function fingerprint64(schema: AvroSchema | object | string): bigint {
  return crc64Avro(new TextEncoder().encode(canonicalForm(schema)));
}

/** CRC-64-AVRO of raw bytes (exposed for tests against the spec's vectors). */
export function crc64Avro(bytes: Uint8Array): bigint {
  let fp = EMPTY;
  for (const b of bytes) fp = (fp >> 8n) ^ TABLE[Number((fp ^ BigInt(b)) & 0xffn)];
  return fp;
}
