import type { AvroRecord } from './avro/schema';
import type { AnyContract, CompatibilityLevel, Contract, FieldRule, GoldAggregate } from './contract';
import type { Issue } from './reasons';
import { BRONZE_PARTITION_COLUMNS, SILVER_BUCKETS, SILVER_PARTITION_COLUMNS, goldTableName, tableName, validTopic } from './topics';

/** What a contract module states; {@link defineContract} derives topics, tables and subject. */
export interface ContractDefinition<E> {
  readonly name: string;
  readonly doc: string;
  readonly kind: 'state' | 'append';
  readonly versions: readonly { readonly version: number; readonly schema: AvroRecord }[];
  readonly keyFields: readonly string[];
  readonly compatibility: CompatibilityLevel;
  readonly rules: readonly FieldRule[];
  readonly checks?: readonly ((event: E) => Issue[])[];
  readonly aggregates?: readonly Omit<GoldAggregate, 'table'>[];
  /** Whether producers may send events as Avro too (default true); see {@link Contract.acceptsAvro}. */
  readonly acceptsAvro?: boolean;
}

/** Separator of composite entity keys; key fields may not contain it (a rule says so). */
export const KEY_SEPARATOR = '|';

/** Builds a frozen {@link Contract} with the naming conventions applied. */
export function defineContract<E>(def: ContractDefinition<E>): Contract<E> {
  if (def.versions.length === 0) throw new Error(`contract ${def.name} has no versions`);
  const keyFields = def.keyFields;
  const topic = validTopic(def.name);
  const contract: Contract<E> = {
    name: def.name,
    doc: def.doc,
    kind: def.kind,
    versions: Object.freeze([...def.versions]),
    latest: def.versions[def.versions.length - 1],
    keyFields,
    entityKey:
      keyFields.length === 1
        ? (event: E) => String((event as Record<string, unknown>)[keyFields[0]])
        : (event: E) => keyFields.map((f) => String((event as Record<string, unknown>)[f])).join(KEY_SEPARATOR),
    compatibility: def.compatibility,
    topic,
    subject: `${topic.name}-value`,
    tables: { bronze: tableName('bronze', def.name), silver: tableName('silver', def.name) },
    buckets: SILVER_BUCKETS,
    partitionColumns: { bronze: BRONZE_PARTITION_COLUMNS, silver: SILVER_PARTITION_COLUMNS },
    rules: def.rules,
    checks: def.checks ?? [],
    aggregates: (def.aggregates ?? []).map((a) => Object.freeze({ ...a, table: goldTableName(def.name, a.name) })),
    acceptsAvro: def.acceptsAvro ?? true,
  };
  return Object.freeze(contract);
}

/** Narrowing helper for code that holds contracts of unknown event type. */
export function isContract(value: unknown): value is AnyContract {
  return typeof value === 'object' && value !== null && 'versions' in value && 'entityKey' in value;
}
