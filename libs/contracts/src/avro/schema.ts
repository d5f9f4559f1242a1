/**
 * The subset of Avro schemas Sluice contracts use, as plain `as const` data, and the mapped type
 * that turns such a schema into its TypeScript value type. Because the TypeScript type of every
 * contract is computed from its schema object, the two cannot drift: change the schema and the
 * type follows (type tests in `contracts/types.type-test.ts` pin the result).
 *
 * Supported: null, boolean, int, long (optionally `timestamp-millis`), float, double, string,
 * enum, record, array, map, and unions of `null` with one other type (nullable fields).
 */

/** A primitive Avro type name. */
export type AvroPrimitiveName = 'null' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'string';

/** `long` with the `timestamp-millis` logical type: epoch milliseconds, UTC. */
export interface AvroTimestampMillis {
  readonly type: 'long';
  readonly logicalType: 'timestamp-millis';
}

/** An Avro enum; `default` (Avro 1.9+) is the symbol a reader uses for a symbol it does not know. */
export interface AvroEnum {
  readonly type: 'enum';
  readonly name: string;
  readonly namespace?: string;
  readonly symbols: readonly string[];
  readonly default?: string;
  readonly doc?: string;
}

/** One field of an Avro record. */
export interface AvroField {
  readonly name: string;
  readonly type: AvroSchema;
  readonly default?: unknown;
  readonly doc?: string;
  readonly aliases?: readonly string[];
}

/** An Avro record. */
export interface AvroRecord {
  readonly type: 'record';
  readonly name: string;
  readonly namespace?: string;
  readonly doc?: string;
  readonly aliases?: readonly string[];
  readonly fields: readonly AvroField[];
}

/** An Avro array. */
export interface AvroArray {
  readonly type: 'array';
  readonly items: AvroSchema;
}

/** An Avro map (string keys). */
export interface AvroMap {
  readonly type: 'map';
  readonly values: AvroSchema;
}

/** A nullable type: the union `["null", T]` (null first, so `null` can be the field default). */
export type AvroNullable = readonly ['null', AvroSchema];

/** Any schema of the supported subset. */
export type AvroSchema =
  | AvroPrimitiveName
  | AvroTimestampMillis
  | AvroEnum
  | AvroRecord
  | AvroArray
  | AvroMap
  | AvroNullable;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

type FieldsToObject<F extends readonly AvroField[]> = Mutable<{
  [Fld in F[number] as Fld['name']]: AvroValue<Fld['type']>;
}>;

/**
 * The TypeScript value of an Avro schema: `long` and `timestamp-millis` are `number` (Sluice
 * rejects integers beyond 2^53 at the edge), enums are their symbol union, nullable unions are
 * `T | null`, records are objects with exactly their fields.
 */
export type AvroValue<S> = S extends 'null'
  ? null
  : S extends 'boolean'
    ? boolean
    : S extends 'int' | 'long' | 'float' | 'double'
      ? number
      : S extends 'string'
        ? string
        : S extends AvroTimestampMillis
          ? number
          : S extends { readonly type: 'enum'; readonly symbols: infer Sy extends readonly string[] }
            ? Sy[number]
            : S extends { readonly type: 'record'; readonly fields: infer F extends readonly AvroField[] }
              ? FieldsToObject<F>
              : S extends { readonly type: 'array'; readonly items: infer I }
                ? AvroValue<I>[]
                : S extends { readonly type: 'map'; readonly values: infer V }
                  ? Record<string, AvroValue<V>>
                  : S extends readonly ['null', infer T]
                    ? AvroValue<T> | null
                    : never;

/** Identity function that keeps the literal type of a record schema while checking its shape. */
export function defineSchema<const S extends AvroRecord>(schema: S): S {
  return schema;
}
