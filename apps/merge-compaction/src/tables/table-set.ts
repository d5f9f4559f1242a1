import { SILVER_PARQUET_CODEC, SILVER_ROW_GROUP_ROWS, type AnyContract, type GoldAggregate } from '@sluice/contracts';
import { isSluiceError } from '@sluice/errors';
import { LakeTable, TABLE_PROPERTIES, type ColumnSpec, type Storage } from '@sluice/lake';
import { mergeError } from '../errors';
import { bronzeColumns, goldColumns, silverColumns } from './layout';

/** Table property recording the bucket count the table's `bucket` column was computed with. */
export const BUCKETS_PROPERTY = 'sluice.buckets';

/**
 * Table property recording the definition a gold table's windows were computed with: window,
 * groups and each measure's function and column ({@link goldDefinition}).
 */
export const GOLD_DEFINITION_PROPERTY = 'sluice.gold.definition';

/** A gold aggregate's definition as recorded: window, groups and measures, order-free. */
interface GoldDefinition {
  readonly windowMs: number;
  readonly groupBy: readonly string[];
  readonly measures: readonly { readonly name: string; readonly fn: string; readonly column: string | null }[];
}

/** Code-unit order: the same in every process, whatever its locale. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function normalised(d: { windowMs: number; groupBy: readonly string[]; measures: readonly { name: string; fn: string; column?: string | null }[] }): GoldDefinition {
  return {
    windowMs: d.windowMs,
    groupBy: [...d.groupBy].sort(byCodeUnits),
    // A count has no column, whatever was written for it.
    measures: [...d.measures].sort((x, y) => byCodeUnits(x.name, y.name)).map((m) => ({ name: m.name, fn: m.fn, column: m.fn === 'count' ? null : (m.column ?? null) })),
  };
}

/** An aggregate's definition as {@link GOLD_DEFINITION_PROPERTY} records it. */
export function goldDefinition(aggregate: GoldAggregate): string {
  return JSON.stringify(normalised(aggregate));
}

/** A recorded definition, undefined when it is not one (malformed JSON or another shape). */
function parseDefinition(recorded: string): GoldDefinition | undefined {
  let value: unknown;
  try {
    value = JSON.parse(recorded);
  } catch {
    return undefined;
  }
  const d = value as { windowMs?: unknown; groupBy?: unknown; measures?: unknown } | null;
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const measure = (m: unknown): boolean => {
    const x = m as { name?: unknown; fn?: unknown; column?: unknown } | null;
    return x !== null && typeof x === 'object' && typeof x.name === 'string' && typeof x.fn === 'string' && (x.column === null || x.column === undefined || typeof x.column === 'string');
  };
  if (d === null || typeof d !== 'object' || typeof d.windowMs !== 'number' || !strings(d.groupBy) || !Array.isArray(d.measures) || !d.measures.every(measure)) return undefined;
  return normalised(d as GoldDefinition);
}

/**
 * What differs between a recorded definition and an aggregate, in words; empty when they mean the
 * same (however the recorded one was written).
 */
export function definitionChanges(recorded: string, aggregate: GoldAggregate): string[] {
  const was = parseDefinition(recorded);
  if (was === undefined) return [`an unreadable recorded definition ${JSON.stringify(recorded.slice(0, 200))}`];
  const now = normalised(aggregate);
  const changes: string[] = [];
  if (was.windowMs !== now.windowMs) changes.push(`window ${was.windowMs} ms → ${now.windowMs} ms`);
  if (was.groupBy.join('\u0000') !== now.groupBy.join('\u0000')) changes.push(`groups ${was.groupBy.join(', ')} → ${now.groupBy.join(', ')}`);
  const show = (m: { fn: string; column: string | null } | undefined) => (m === undefined ? 'none' : `${m.fn}(${m.column ?? '*'})`);
  for (const name of [...new Set([...was.measures, ...now.measures].map((m) => m.name))].sort(byCodeUnits)) {
    const before = was.measures.find((m) => m.name === name);
    const after = now.measures.find((m) => m.name === name);
    if (show(before) !== show(after)) changes.push(`measure ${name}: ${show(before)} → ${show(after)}`);
  }
  return changes;
}

/** Storage of one table, by table name (local directory or S3 prefix; tests wrap it). */
export type StorageFactory = (tableName: string) => Storage;

/** Options of {@link TableSet}. */
export interface TableSetOptions {
  readonly storageFor: StorageFactory;
  /** Prefix before every contract table name (tests, tenants). */
  readonly tablePrefix: string;
  readonly scratchDir?: string;
  /** Compaction's own thresholds, so the tables' small-file and backlog gauges count what it would compact. */
  readonly compactionStats?: { smallFileBytes: number; minSmallFiles: number };
  /** Vacuum's retention: tombstones are kept at least that long (libs/lake `keepTombstonesMs`). */
  readonly keepTombstonesMs?: number;
}

/**
 * Opens (creating on first use) the bronze, silver and gold tables of contracts and evolves
 * their schemas. Handles are cached: a LakeTable is stateless, every operation reads the log.
 */
export class TableSet {
  private readonly tables = new Map<string, Promise<LakeTable>>();
  /** Gold tables whose columns were checked against their aggregate (once per process: aggregates change only with a release). */
  private readonly goldChecked = new Set<string>();
  /** Bronze and silver tables whose recorded bucket count was checked against their contract's. */
  private readonly bucketsChecked = new Set<string>();

  constructor(private readonly options: TableSetOptions) {}

  /** Full table name (prefix + contract table name). */
  name(table: string): string {
    return `${this.options.tablePrefix}${table}`;
  }

  /** The bronze table, created with `columns` (contract columns) when absent. */
  bronze(contract: AnyContract, columns: readonly ColumnSpec[]): Promise<LakeTable> {
    const table = this.openOrCreate(contract.tables.bronze, {
      columns: bronzeColumns(columns),
      partitionColumns: [...contract.partitionColumns.bronze],
      // Append-only by protocol: a bug in this app cannot rewrite history.
      properties: { 'delta.appendOnly': 'true', [BUCKETS_PROPERTY]: String(contract.buckets) },
      description: `bronze history of ${contract.name}`,
    });
    return this.withBucketsChecked(contract, contract.tables.bronze, table);
  }

  /** The silver table, created with `columns` (contract columns) when absent. */
  silver(contract: AnyContract, columns: readonly ColumnSpec[]): Promise<LakeTable> {
    const table = this.openOrCreate(contract.tables.silver, {
      columns: silverColumns(columns),
      partitionColumns: [...contract.partitionColumns.silver],
      description: `${contract.kind === 'state' ? 'current state' : 'deduplicated events'} of ${contract.name}`,
      // Silver files are written in SILVER_ROW_ORDER (day, then key hash; MERGE and compaction
      // both); small row groups then let an entity lookup by key hash read about one group per
      // day in a file, and a filter on a day read that day's groups, not all of them.
      // Uncompressed: reads skip decompression for ~1.8× the bytes (SILVER_PARQUET_CODEC).
      properties: {
        [TABLE_PROPERTIES.rowGroupRows]: String(SILVER_ROW_GROUP_ROWS),
        [TABLE_PROPERTIES.compression]: SILVER_PARQUET_CODEC,
        [BUCKETS_PROPERTY]: String(contract.buckets),
      },
    });
    return this.withBucketsChecked(contract, contract.tables.silver, table);
  }

  /**
   * The table, once its recorded bucket count is the contract's (checked once per process). With
   * another count an entity's rows would be looked for in another bucket than the one holding
   * them: silver would keep a second row per entity, pruned MERGEs would miss the first. Tables
   * created before the count was recorded have none and are taken as they are.
   */
  private async withBucketsChecked(contract: AnyContract, name: string, opening: Promise<LakeTable>): Promise<LakeTable> {
    const table = await opening;
    if (this.bucketsChecked.has(name)) return table;
    const recorded = (await table.snapshot()).configuration[BUCKETS_PROPERTY];
    if (recorded !== undefined && recorded !== String(contract.buckets)) {
      throw mergeError(
        'MERGE_BUCKETS_CHANGED',
        `table ${this.name(name)} is bucketed by ${recorded} buckets, contract ${contract.name} now declares ${contract.buckets}: its entities would be looked for in other buckets than the ones holding them; keep the count, or give the contract new table names (rebuilt from the topic)`,
        { details: { table: this.name(name), recorded: Number(recorded), declared: contract.buckets } },
      );
    }
    this.bucketsChecked.add(name);
    return table;
  }

  /**
   * A gold aggregate table. One that lacks a column its aggregate declares (a release added a
   * measure or a group) is refused with MERGE_GOLD_SHAPE_CHANGED: a measure added to stored
   * windows would count only the events folded after it, and a group would change every row's
   * key, so either needs a new table name. Otherwise the measure was silently left out. So is one
   * whose recorded definition differs though its columns do not (another window length, a sum
   * of another column, a measure dropped); tables from before the definition was recorded are
   * checked by their columns only.
   */
  async gold(contract: AnyContract, aggregate: GoldAggregate): Promise<LakeTable> {
    const columns = goldColumns(contract, aggregate);
    const definition = goldDefinition(aggregate);
    const table = await this.openOrCreate(aggregate.table, {
      columns,
      partitionColumns: [],
      description: `gold ${aggregate.name} of ${contract.name}`,
      properties: { [GOLD_DEFINITION_PROPERTY]: definition },
    });
    if (this.goldChecked.has(aggregate.table)) return table;
    const snapshot = await table.snapshot();
    const have = new Map(snapshot.schema.fields.map((f) => [f.name, f]));
    const lacking = columns.filter((c) => !have.has(c.name)).map((c) => c.name);
    if (lacking.length > 0) {
      throw mergeError(
        'MERGE_GOLD_SHAPE_CHANGED',
        `gold table ${this.name(aggregate.table)} lacks ${lacking.join(', ')}, which aggregate ${aggregate.name} declares: its stored windows cannot gain them; give the aggregate a new table name (built from bronze's history)`,
        { details: { table: this.name(aggregate.table), aggregate: aggregate.name, lacking } },
      );
    }
    // A column whose type or nullability changed (a count turned into a sum or back, a sum of a long
    // a sum of a double, a group over another column): its stored windows hold the old measure.
    const changed = columns.filter((c) => {
      const stored = have.get(c.name);
      return stored !== undefined && (JSON.stringify(stored.type) !== JSON.stringify(c.type) || stored.nullable !== (c.nullable ?? true));
    });
    if (changed.length > 0) {
      const what = changed.map((c) => `${c.name} (table: ${JSON.stringify(have.get(c.name)?.type)}${have.get(c.name)?.nullable ? '' : ' not null'}; aggregate: ${JSON.stringify(c.type)}${c.nullable ?? true ? '' : ' not null'})`);
      throw mergeError(
        'MERGE_GOLD_SHAPE_CHANGED',
        `gold table ${this.name(aggregate.table)} stores ${what.join(', ')} differently from aggregate ${aggregate.name}: its stored windows hold the old measure; give the aggregate a new table name (built from bronze's history)`,
        { details: { table: this.name(aggregate.table), aggregate: aggregate.name, changed: changed.map((c) => c.name) } },
      );
    }
    const recorded = snapshot.configuration[GOLD_DEFINITION_PROPERTY];
    const differences = recorded === undefined ? [] : definitionChanges(recorded, aggregate);
    if (differences.length > 0) {
      throw mergeError(
        'MERGE_GOLD_SHAPE_CHANGED',
        `gold table ${this.name(aggregate.table)} was computed with another definition than aggregate ${aggregate.name} (${differences.join('; ')}): its stored windows hold the old measure; give the aggregate a new table name (built from bronze's history)`,
        { details: { table: this.name(aggregate.table), aggregate: aggregate.name, definition: differences } },
      );
    }
    this.goldChecked.add(aggregate.table);
    return table;
  }

  /** The table if it exists, else undefined (readers must not create tables). */
  async existing(table: string): Promise<LakeTable | undefined> {
    const cached = this.tables.get(table);
    if (cached) return cached;
    const storage = this.options.storageFor(this.name(table));
    try {
      const opened = await LakeTable.open(storage, this.tableOptions(table));
      this.tables.set(table, Promise.resolve(opened));
      return opened;
    } catch (err) {
      if (isSluiceError(err, 'LAKE_NOT_FOUND')) return undefined;
      throw err;
    }
  }

  /**
   * Adds the `wanted` columns the table lacks, as nullable columns (metadata-only commit).
   * Returns the names added (empty when the schema already had them).
   */
  async evolve(table: LakeTable, wanted: readonly ColumnSpec[]): Promise<string[]> {
    const have = new Set((await table.snapshot()).schema.fields.map((f) => f.name));
    const missing = wanted.filter((c) => !have.has(c.name)).map((c) => ({ ...c, nullable: true }));
    if (missing.length === 0) return [];
    await table.addColumns(missing);
    return missing.map((c) => c.name);
  }

  private openOrCreate(table: string, spec: Parameters<typeof LakeTable.create>[1]): Promise<LakeTable> {
    let p = this.tables.get(table);
    if (!p) {
      p = this.doOpenOrCreate(table, spec);
      this.tables.set(table, p);
      // A failed open (storage down) must not be cached forever.
      p.catch(() => this.tables.delete(table));
    }
    return p;
  }

  private async doOpenOrCreate(table: string, spec: Parameters<typeof LakeTable.create>[1]): Promise<LakeTable> {
    const storage = this.options.storageFor(this.name(table));
    const options = this.tableOptions(table);
    try {
      return await LakeTable.open(storage, options);
    } catch (err) {
      if (!isSluiceError(err, 'LAKE_NOT_FOUND')) throw err;
    }
    try {
      return await LakeTable.create(storage, { ...spec, name: this.name(table) }, options);
    } catch (err) {
      // Another worker created it first: use theirs.
      if (isSluiceError(err, 'LAKE_TABLE_EXISTS')) return LakeTable.open(storage, options);
      throw err;
    }
  }

  private tableOptions(table: string) {
    return { name: this.name(table), scratchDir: this.options.scratchDir, compactionStats: this.options.compactionStats, keepTombstonesMs: this.options.keepTombstonesMs };
  }
}
