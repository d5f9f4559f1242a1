import { lakeError } from '../errors';

/** Delta primitive types this library writes (DELTA.md §3); `decimal(p,s)` with no space. */
export type DeltaPrimitiveType =
  | 'string'
  | 'long'
  | 'integer'
  | 'short'
  | 'byte'
  | 'float'
  | 'double'
  | 'boolean'
  | 'binary'
  | 'date'
  | 'timestamp'
  | `decimal(${number},${number})`;

/** A Delta type: primitive, or nested array/map/struct as in the schema JSON. */
export type DeltaType =
  | DeltaPrimitiveType
  | { type: 'array'; elementType: DeltaType; containsNull: boolean }
  | { type: 'map'; keyType: DeltaType; valueType: DeltaType; valueContainsNull: boolean }
  | { type: 'struct'; fields: DeltaField[] };

/** One column (or nested field) of a Delta schema. */
export interface DeltaField {
  name: string;
  type: DeltaType;
  nullable: boolean;
  metadata: Record<string, unknown>;
}

/** A struct column: its Delta `nullCount` stat is per leaf, not one number. */
export function isStruct(f: DeltaField): boolean {
  return typeof f.type === 'object' && f.type.type === 'struct';
}

/** The table schema: a struct of columns, as stored in `metaData.schemaString`. */
export interface TableSchema {
  type: 'struct';
  fields: DeltaField[];
}

/** A column as callers describe it; `nullable` defaults to true, `metadata` to `{}`. */
export interface ColumnSpec {
  name: string;
  type: DeltaType;
  nullable?: boolean;
}

const PRIMITIVE_DUCK: Record<string, string> = {
  string: 'VARCHAR',
  long: 'BIGINT',
  integer: 'INTEGER',
  short: 'SMALLINT',
  byte: 'TINYINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  binary: 'BLOB',
  date: 'DATE',
  timestamp: 'TIMESTAMPTZ',
};

const DECIMAL = /^decimal\((\d+),(\d+)\)$/;
// Spark rejects these characters in column names without column mapping (DELTA.md §1).
const FORBIDDEN_NAME_CHARS = /[ ,;{}()\n\t=]/;

/** Builds a schema from column specs, validating names and types. */
export function schemaFromColumns(columns: readonly ColumnSpec[]): TableSchema {
  const schema: TableSchema = {
    type: 'struct',
    fields: columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable ?? true, metadata: {} })),
  };
  validateSchema(schema);
  return schema;
}

/**
 * Throws LAKE_SCHEMA_INVALID for names Spark cannot read, case-insensitive duplicates, unknown
 * types and column invariants (which this library refuses, DELTA.md §1).
 */
export function validateSchema(schema: TableSchema, where = ''): void {
  if (schema.fields.length === 0 && where === '') throw lakeError('LAKE_SCHEMA_INVALID', 'a table needs at least one column');
  const seen = new Set<string>();
  for (const field of schema.fields) {
    const at = where ? `${where}.${field.name}` : field.name;
    if (typeof field.name !== 'string' || field.name.length === 0) {
      throw lakeError('LAKE_SCHEMA_INVALID', `column name must be a non-empty string (at ${JSON.stringify(where || '<root>')})`);
    }
    if (FORBIDDEN_NAME_CHARS.test(field.name)) {
      throw lakeError('LAKE_SCHEMA_INVALID', `column name ${JSON.stringify(at)} contains one of ' ,;{}()\\n\\t=', which Delta readers reject without column mapping`);
    }
    const lower = field.name.toLowerCase();
    if (seen.has(lower)) throw lakeError('LAKE_SCHEMA_INVALID', `column name ${JSON.stringify(at)} is duplicated (names are case-insensitive)`);
    seen.add(lower);
    if (field.metadata && 'delta.invariants' in field.metadata) {
      throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `column ${JSON.stringify(at)} has a delta.invariants constraint, which this library does not support`);
    }
    validateType(field.type, at);
  }
}

function validateType(type: DeltaType, at: string): void {
  if (typeof type === 'string') {
    if (type in PRIMITIVE_DUCK) return;
    const m = DECIMAL.exec(type);
    if (m && Number(m[1]) >= 1 && Number(m[1]) <= 38 && Number(m[2]) <= Number(m[1])) return;
    throw lakeError('LAKE_SCHEMA_INVALID', `column ${JSON.stringify(at)} has unsupported type ${JSON.stringify(type)}`);
  }
  if (type.type === 'array') return validateType(type.elementType, `${at}[]`);
  if (type.type === 'map') {
    validateType(type.keyType, `${at}.key`);
    return validateType(type.valueType, `${at}.value`);
  }
  if (type.type === 'struct') return validateSchema({ type: 'struct', fields: type.fields }, at);
  throw lakeError('LAKE_SCHEMA_INVALID', `column ${JSON.stringify(at)} has unsupported type ${JSON.stringify(type)}`);
}

/** The DuckDB type that writes this Delta type correctly (TIMESTAMPTZ for `timestamp`). */
export function duckType(type: DeltaType): string {
  if (typeof type === 'string') {
    const primitive = PRIMITIVE_DUCK[type];
    if (primitive) return primitive;
    const m = DECIMAL.exec(type);
    if (m) return `DECIMAL(${m[1]},${m[2]})`;
    throw lakeError('LAKE_SCHEMA_INVALID', `unsupported type ${JSON.stringify(type)}`);
  }
  if (type.type === 'array') return `${duckType(type.elementType)}[]`;
  if (type.type === 'map') return `MAP(${duckType(type.keyType)}, ${duckType(type.valueType)})`;
  return `STRUCT(${type.fields.map((f) => `"${f.name.replace(/"/g, '""')}" ${duckType(f.type)}`).join(', ')})`;
}

/** True for types whose min/max may go into `stats` (numbers, dates, timestamps, strings; DELTA.md §2). */
export function hasMinMaxStats(type: DeltaType): boolean {
  return typeof type === 'string' && type !== 'boolean' && type !== 'binary';
}

/** True for types that may be partition columns (primitives other than binary). */
export function isPartitionableType(type: DeltaType): boolean {
  return typeof type === 'string' && type !== 'binary';
}

/** Parses `metaData.schemaString`. */
export function parseSchemaString(text: string): TableSchema {
  const parsed = JSON.parse(text) as TableSchema;
  if (parsed?.type !== 'struct' || !Array.isArray(parsed.fields)) {
    throw lakeError('LAKE_SCHEMA_INVALID', 'schemaString is not a struct type');
  }
  return parsed;
}

/** Finds a column by exact name or throws LAKE_SCHEMA_INVALID. */
export function requireField(schema: TableSchema, name: string): DeltaField {
  const field = schema.fields.find((f) => f.name === name);
  if (!field) throw lakeError('LAKE_SCHEMA_INVALID', `no column ${JSON.stringify(name)} in the table schema`);
  return field;
}
