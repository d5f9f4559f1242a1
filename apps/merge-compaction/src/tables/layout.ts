import { KEY_HASH_COLUMN, SILVER_ROW_ORDER, columnsOf, type AnyContract, type Column, type GoldAggregate } from '@sluice/contracts';
import type { ColumnSpec, DeltaPrimitiveType, MergeSpec } from '@sluice/lake';

/**
 * Column layout of the three tiers (docs/design/merge-compaction.md, "Tables"). Contract columns
 * come from `columnsOf` of the writer schema versions seen, so a new optional field of a newer
 * version becomes a nullable column when its first event arrives.
 */

/** Bronze/silver partition column: silver bucket of the entity key (`contract.partitionColumns`). */
export const BUCKET = 'bucket';
/** Bronze partition column: UTC date of event_time. */
export const EVENT_DATE = 'event_date';
/** keyHashOf(entity key): stats on it let a MERGE skip files and a lookup skip row groups. */
export const KEY_HASH = KEY_HASH_COLUMN;
/** Bronze: source coordinates, also how tier 2 reads increments. */
export const KAFKA_PARTITION = '_kafka_partition';
export const KAFKA_OFFSET = '_kafka_offset';
/** Bronze: when tier 1 wrote the row, and when validate produced it (Kafka timestamp). */
export const INGESTED_AT = '_ingested_at';
export const PRODUCED_AT = '_produced_at';
/** Gold: window start as epoch ms (integer merge key) and as a timestamp for readers. */
export const WINDOW_MS = 'window_ms';
export const WINDOW_START = 'window_start';
/**
 * Gold: the row's merge version, above the one it replaces and at least the bronze version its
 * last step read. The column is named for what it held when gold steps recomputed whole windows
 * from bronze (the bronze version read); existing tables keep the name.
 */
export const GOLD_ROW_VERSION = '_bronze_version';

const TYPE: Record<Column['type'], DeltaPrimitiveType> = {
  string: 'string',
  boolean: 'boolean',
  int: 'integer',
  long: 'long',
  float: 'float',
  double: 'double',
  'timestamp-millis': 'timestamp',
};

function spec(c: Column): ColumnSpec {
  return { name: c.name, type: TYPE[c.type], nullable: c.nullable };
}

/** Contract columns for these writer versions (undefined = latest), in first-seen order. */
export function contractColumns(contract: AnyContract, writerVersions: Iterable<number | undefined>): ColumnSpec[] {
  const out = new Map<string, ColumnSpec>();
  const versions = [...new Set(writerVersions)].sort((a, b) => (a ?? Infinity) - (b ?? Infinity));
  for (const v of versions.length ? versions : [undefined]) {
    const schema = contract.versions.find((x) => x.version === v)?.schema ?? contract.latest.schema;
    for (const c of columnsOf(contract, schema)) if (!out.has(c.name)) out.set(c.name, spec(c));
  }
  return [...out.values()];
}

/** Bronze columns: contract columns, then placement and source coordinates. */
export function bronzeColumns(contractCols: readonly ColumnSpec[]): ColumnSpec[] {
  return [
    ...contractCols,
    { name: KEY_HASH, type: 'long', nullable: false },
    { name: BUCKET, type: 'integer', nullable: false },
    { name: EVENT_DATE, type: 'date', nullable: false },
    { name: KAFKA_PARTITION, type: 'integer', nullable: false },
    { name: KAFKA_OFFSET, type: 'long', nullable: false },
    { name: INGESTED_AT, type: 'timestamp', nullable: false },
    { name: PRODUCED_AT, type: 'timestamp', nullable: true },
  ];
}

/** Silver columns: contract columns, key hash and bucket. */
export function silverColumns(contractCols: readonly ColumnSpec[]): ColumnSpec[] {
  return [...contractCols, { name: KEY_HASH, type: 'long', nullable: false }, { name: BUCKET, type: 'integer', nullable: false }];
}

/** Silver merge keys: the entity key for `state` contracts, key + event_id for `append` ones. */
export function silverKeys(contract: AnyContract): string[] {
  return contract.kind === 'state' ? [...contract.keyFields] : [...contract.keyFields, 'event_id'];
}

/**
 * How every silver MERGE of a contract matches and lays out rows (the fold and the fold-all
 * alike): keys, version order, tombstones, the key hash for file skipping and SILVER_ROW_ORDER
 * inside files. A MERGE without the row order would undo the layout compaction keeps.
 */
export function silverMergeLayout(contract: AnyContract) {
  return {
    keys: silverKeys(contract),
    versionColumn: 'version',
    deleteColumn: contract.kind === 'state' ? 'op' : undefined,
    deleteValue: 'delete',
    clusterColumn: KEY_HASH,
    rowOrder: SILVER_ROW_ORDER,
  } satisfies Partial<MergeSpec>;
}

/** Gold columns of an aggregate: window, group columns typed as in the contract, measures. */
export function goldColumns(contract: AnyContract, aggregate: GoldAggregate): ColumnSpec[] {
  const all = new Map(contractColumns(contract, contract.versions.map((v) => v.version)).map((c) => [c.name, c]));
  const group = aggregate.groupBy.map((g) => {
    const c = all.get(g);
    if (!c) throw new Error(`gold ${aggregate.name}: group column ${g} is not a column of ${contract.name}`);
    return { name: g, type: c.type, nullable: true };
  });
  const measures = aggregate.measures.map((m): ColumnSpec => {
    if (m.fn === 'count') return { name: m.name, type: 'long', nullable: false };
    const c = all.get(m.column ?? '');
    if (!c) throw new Error(`gold ${aggregate.name}: measure ${m.name} sums unknown column ${String(m.column)}`);
    return { name: m.name, type: c.type === 'double' || c.type === 'float' ? 'double' : 'long', nullable: true };
  });
  return [
    { name: WINDOW_MS, type: 'long', nullable: false },
    { name: WINDOW_START, type: 'timestamp', nullable: false },
    ...group,
    ...measures,
    { name: GOLD_ROW_VERSION, type: 'long', nullable: false },
  ];
}
