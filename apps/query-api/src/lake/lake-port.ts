import type { FileFacts } from '../query/prune';
import type { Scalar } from '../query/query-types';
import type { TableShape } from '../query/table-schema';

/** One live data file of a snapshot. */
export interface LiveFile extends FileFacts {
  /** Path relative to the table root, as in the `add` action. */
  path: string;
  size: number;
}

/** One consistent version of one table: everything an answer is computed from. */
export interface TableSnapshot {
  table: string;
  /** The Delta table's id (`metaData.id`): another id under the same name is a table created again. */
  tableId?: string;
  version: number;
  /** When the commit became visible (ms since epoch). */
  commitTimeMs: number;
  shape: TableShape;
  files: LiveFile[];
  /** Latest committed `txn` version per appId (for Sluice writers: the last Kafka offset written). */
  txns: Record<string, number>;
  configuration: Record<string, string>;
  /**
   * Rows of an amortised MERGE not yet folded into the table (docs/adr/0001-merge-design.md): the
   * answer is the table ⊕ this tail, each key at its highest version. Absent for time travel and
   * for tables without a tail.
   */
  pending?: { version: number; files: LiveFile[]; keys: string[] };
  /** The tail's version when the table has one, with pending rows or not (change detection). */
  tailVersion?: number;
  /**
   * A past version of a table with a tail, read without it: its `txn` offsets may name batches
   * that were still in the tail, so they are not reported (`txns` is empty).
   */
  tailExcluded?: true;
}

/**
 * Whether `next` is at least as new as `prev` of the same table name: the same table (id) at the
 * same or a later version, or a table created again under the name (another id) with a later
 * commit. A slow load or a late answer of the dropped table is older.
 */
export function notOlderThan(next: Pick<TableSnapshot, 'tableId' | 'version' | 'commitTimeMs'>, prev: Pick<TableSnapshot, 'tableId' | 'version' | 'commitTimeMs'>): boolean {
  return next.tableId === prev.tableId ? next.version >= prev.version : next.commitTimeMs > prev.commitTimeMs;
}

/** A compiled read: SQL over {@link LakePort.relation} with `$n` parameters. */
export interface LakeRead {
  sql: string;
  params: Scalar[];
  /** Interrupt the DuckDB query after this many ms (QUERY_TIMEOUT once it has stopped). */
  timeoutMs?: number;
}

/**
 * What query-api needs from the lake. The adapter in lake-adapter.ts implements it over
 * @sluice/lake (the only importer of DuckDB); keeping the port here keeps the HTTP layer and the
 * compiler independent of how the lake executes SQL.
 */
export interface LakePort {
  /** The relation name compiled SQL reads from; the adapter binds it to the chosen files. */
  readonly relation: string;
  /** Names of the tables this service serves. */
  tables(): string[];
  /**
   * Cheap check whether the table (or its tail) has a commit after `snapshot` — one existence
   * check per log, so polling does not replay the log while nothing changes.
   */
  changedSince(snapshot: TableSnapshot): Promise<boolean>;
  /** The newest committed version (throws QUERY_TABLE_UNKNOWN). */
  latest(table: string): Promise<TableSnapshot>;
  /** A past version (throws QUERY_VERSION_UNKNOWN). */
  atVersion(table: string, version: number): Promise<TableSnapshot>;
  /** The last version committed at or before `ms` (throws QUERY_VERSION_UNKNOWN). */
  atTimestamp(table: string, ms: number): Promise<TableSnapshot>;
  /**
   * Runs `read` over exactly `files` of `snapshot` (and `pendingFiles` of its tail), in the
   * locked-down DuckDB mode. Rows come back
   * as JSON-safe objects (large integers as strings, timestamps as `YYYY-MM-DD hh:mm:ss+00`).
   */
  query(snapshot: TableSnapshot, files: LiveFile[], pendingFiles: LiveFile[], read: LakeRead): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}
