// Public entry of @sluice/contracts: pure data and pure functions, no I/O (see README.md).
export * from './reasons';
export * from './avro/schema';
export * from './envelope';
export * from './contract';
export * from './topics';
export * from './define';
export * from './contracts';
export { parseStrictJson, parseJsonCollecting, DEFAULT_MAX_DEPTH, type JsonValue, type StrictJsonOptions } from './json/strict-json';
export { parseIsoMillis, formatIsoMillis, utcDate } from './validate/timestamps';
export {
  decodeEvent,
  validateEvent,
  DEFAULT_LIMITS,
  CONTRACT_FIELD,
  MAX_ISSUES,
  type ValidationLimits,
  type DecodeOptions,
  type DecodeResult,
  type DecodedEvent,
  type EventOf,
} from './decode';
export {
  AvroDecoder,
  avroTypeOf,
  encodeAvroBody,
  encodeSingleObject,
  encodeConfluent,
  readFraming,
  resolveValue,
  fingerprintOf,
  hex64,
  CONFLUENT_MAGIC,
  CONFLUENT_HEADER_LENGTH,
  SINGLE_OBJECT_MAGIC,
  SINGLE_OBJECT_HEADER_LENGTH,
  type Framing,
  type AvroDecoded,
} from './avro/codec';
export { canonicalForm, fingerprint64, crc64Avro } from './avro/fingerprint';
export { murmur2, toPositive, keyBytes, keyHashOf, partitionOf, bucketOf } from './partitioning/murmur2';
export { placementOf, columnsOf, toRow, toColumns, type Placement, type Column, type ColumnType } from './rows';
export { sampleOrderJson, sampleInventoryJson, sampleClickJson } from './samples';
export {
  createRegistryClient,
  registryAuth,
  RegistryError,
  REGISTRY_ERROR_CODES,
  type RegistryClient,
  type RegistryClientOptions,
  type RegistryAuth,
  type RegistryErrorCode,
  type FetchLike,
  type FetchResponseLike,
  type SubjectVersion,
  type CompatibilityResult,
} from './registry/client';
export { registerContract, contractForSchema, learnSchemaId } from './registry/contracts';
export { MAX_REMEMBERED_MISSES, SchemaIdLearner, type SchemaIdLearnerOptions } from './registry/schema-ids';
export { deadLetterHeaders, deadLetterRecord, dlqDetail, recordBytes, MAX_DLQ_DETAIL_BYTES, MAX_DLQ_RECORD_BYTES, type DeadLetterFacts, type DeadLetterHeaders, type DeadLetterIssue, type DeadLetterRecord } from './dlq';
