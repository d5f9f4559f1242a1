import type { AvroNullable, AvroRecord, AvroSchema } from './avro/schema';
import type { AnyContract } from './contract';
import { PAYLOAD_FIELD } from './envelope';
import { bucketOf } from './partitioning/murmur2';
import { utcDate } from './validate/timestamps';

/**
 * Where a valid event lands: its entity key, silver bucket and bronze partition values.
 * bronze is partitioned by (`event_date`, `bucket`), silver by `bucket`.
 */
export interface Placement {
  readonly key: string;
  readonly bucket: number;
  /** UTC date of event_time, `YYYY-MM-DD`. */
  readonly eventDate: string;
}

/** Computes the {@link Placement} of a valid event of `contract`. */
export function placementOf(contract: AnyContract, event: { event_time: number }): Placement {
  const key = contract.entityKey(event);
  return { key, bucket: bucketOf(key, contract.buckets), eventDate: utcDate(event.event_time) };
}

/** Column types of flattened rows (Avro enums become strings, timestamps epoch ms). */
export type ColumnType = 'string' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'timestamp-millis';

/** One column of a contract's flattened table row. */
export interface Column {
  readonly name: string;
  readonly type: ColumnType;
  /** Payload columns are nullable (deletes carry no payload); so are nullable fields. */
  readonly nullable: boolean;
  /** The allowed symbols when the field is an Avro enum. */
  readonly symbols?: readonly string[];
}

function columnOf(name: string, schema: AvroSchema, nullable: boolean): Column {
  if (Array.isArray(schema)) return columnOf(name, schema[1] as AvroSchema, true);
  if (typeof schema === 'string') {
    if (schema === 'null') throw new Error(`column ${name}: a null-only type has no column`);
    return { name, type: schema as ColumnType, nullable };
  }
  const complex = schema as Exclude<AvroSchema, string | readonly unknown[]>;
  if (complex.type === 'long') return { name, type: 'timestamp-millis', nullable };
  if (complex.type === 'enum') return { name, type: 'string', nullable, symbols: complex.symbols };
  throw new Error(`column ${name}: ${complex.type} fields are not flattened into columns`);
}

/**
 * The columns of a contract's flattened rows, in order: envelope, key, then payload fields
 * lifted to the top level. Payload names never clash with envelope or key names (unit-tested).
 */
export function columnsOf(contract: AnyContract, schema: AvroRecord = contract.latest.schema): Column[] {
  const columns: Column[] = [];
  for (const field of schema.fields) {
    if (field.name !== PAYLOAD_FIELD) {
      columns.push(columnOf(field.name, field.type, false));
      continue;
    }
    const payload = (field.type as AvroNullable)[1] as AvroRecord;
    for (const inner of payload.fields) columns.push(columnOf(inner.name, inner.type, true));
  }
  return columns;
}

/**
 * Flattens a valid event into one table row with exactly the columns of {@link columnsOf}:
 * payload fields lifted to the top level, all null on deletes.
 */
export function toRow(contract: AnyContract, event: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  const payload = event[PAYLOAD_FIELD] as Record<string, unknown> | null | undefined;
  for (const column of columnsFor(contract)) {
    if (column.payload) row[column.name] = payload === null || payload === undefined ? null : (payload[column.name] ?? null);
    else row[column.name] = event[column.name];
  }
  return row;
}

/**
 * The rows {@link toRow} makes of `events`, column by column: one array per column name, each
 * `events.length` long. Cheaper for a writer that hands columns on (tier 1) than one object per
 * row.
 */
export function toColumns(contract: AnyContract, events: readonly Record<string, unknown>[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const column of columnsFor(contract)) {
    const values = new Array<unknown>(events.length);
    const name = column.name;
    if (column.payload) {
      for (let i = 0; i < events.length; i++) {
        const payload = events[i][PAYLOAD_FIELD] as Record<string, unknown> | null | undefined;
        values[i] = payload === null || payload === undefined ? null : (payload[name] ?? null);
      }
    } else {
      for (let i = 0; i < events.length; i++) values[i] = events[i][name];
    }
    out[name] = values;
  }
  return out;
}

const columnCache = new WeakMap<AnyContract, { name: string; payload: boolean }[]>();

function columnsFor(contract: AnyContract): { name: string; payload: boolean }[] {
  let cached = columnCache.get(contract);
  if (cached === undefined) {
    const top = new Set(contract.latest.schema.fields.map((f) => f.name));
    cached = columnsOf(contract).map((c) => ({ name: c.name, payload: !top.has(c.name) }));
    columnCache.set(contract, cached);
  }
  return cached;
}
