import { lakeError } from '../errors';
import type { AddAction, MetadataAction, ProtocolAction, RemoveAction, TxnAction } from './actions';
import { parseJsonLossless } from './json';
import { parseSchemaString, type TableSchema } from '../table/schema';
import { decodeAddPath } from '../table/partition';

/** A live data file of a snapshot. */
export interface LiveFile {
  /** `add.path` exactly as in the log (URI-encoded). */
  path: string;
  /** Storage key (the path URI-decoded once). */
  key: string;
  /** Partition column → Delta partition value string (null for null). */
  partitionValues: Readonly<Record<string, string | null>>;
  /** Bytes. */
  size: number;
  /** ms since epoch. */
  modificationTime: number;
  /** The raw `add` action (stats string included). */
  add: AddAction;
}

/** Parsed `add.stats`; integers beyond 2^53 are bigint. */
export interface FileStats {
  numRecords?: number;
  minValues?: Record<string, unknown>;
  maxValues?: Record<string, unknown>;
  nullCount?: Record<string, unknown>;
}

/** Table configuration keys this library understands. */
export const TABLE_PROPERTIES = {
  appendOnly: 'delta.appendOnly',
  checkpointInterval: 'delta.checkpointInterval',
  deletedFileRetentionDuration: 'delta.deletedFileRetentionDuration',
  logRetentionDuration: 'delta.logRetentionDuration',
  /** Rows per Parquet row group of the files this library writes (see table/properties.ts). */
  rowGroupRows: 'sluice.parquet.rowGroupRows',
  /** Compression codec of the files this library writes (see table/properties.ts). */
  compression: 'sluice.parquet.compression',
} as const;

/**
 * A consistent, immutable view of a table at one version: protocol, metadata, live files,
 * tombstones and the latest `txn` version per appId.
 */
export class Snapshot {
  /** Table version (the N of N.json). */
  readonly version: number;
  /** Commit time of this version: the (monotonised) mtime of N.json, ms since epoch. */
  readonly timestampMs: number;
  readonly protocol: ProtocolAction;
  readonly metadata: MetadataAction;
  /** Parsed schema (columns in order). */
  readonly schema: TableSchema;
  /** Partition columns, in directory order. */
  readonly partitionColumns: readonly string[];
  /** Live files sorted by path. */
  readonly files: readonly LiveFile[];
  /** Tombstones (removes) still in the log state, for vacuum. */
  readonly tombstones: readonly RemoveAction[];
  private readonly txns: ReadonlyMap<string, TxnAction>;
  private readonly statsCache = new WeakMap<LiveFile, FileStats | null>();

  constructor(init: {
    version: number;
    timestampMs: number;
    protocol: ProtocolAction;
    metadata: MetadataAction;
    adds: Iterable<AddAction>;
    tombstones: Iterable<RemoveAction>;
    txns: ReadonlyMap<string, TxnAction>;
  }) {
    this.version = init.version;
    this.timestampMs = init.timestampMs;
    this.protocol = init.protocol;
    this.metadata = init.metadata;
    this.schema = parseSchemaString(init.metadata.schemaString);
    this.partitionColumns = [...init.metadata.partitionColumns];
    this.files = [...init.adds]
      .map((add) => ({
        path: add.path,
        key: decodeAddPath(add.path),
        partitionValues: add.partitionValues ?? {},
        size: add.size,
        modificationTime: Number(add.modificationTime),
        add,
      }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    this.tombstones = [...init.tombstones];
    this.txns = init.txns;
  }

  /** Latest `txn.version` for `appId` (exact, as bigint), or undefined when none. */
  txnVersion(appId: string): bigint | undefined {
    const txn = this.txns.get(appId);
    return txn === undefined ? undefined : BigInt(txn.version);
  }

  /** Every appId with its latest `txn.version`. */
  txnVersions(): Map<string, bigint> {
    return new Map([...this.txns].map(([id, t]) => [id, BigInt(t.version)]));
  }

  /** The raw txn actions (for checkpoints). */
  txnActions(): TxnAction[] {
    return [...this.txns.values()];
  }

  /** Table configuration (`metaData.configuration`). */
  get configuration(): Readonly<Record<string, string>> {
    return this.metadata.configuration;
  }

  /** Parsed stats of a live file (cached), or undefined when the add has none or they are unreadable. */
  stats(file: LiveFile): FileStats | undefined {
    const cached = this.statsCache.get(file);
    if (cached !== undefined) return cached ?? undefined;
    let parsed: FileStats | null = null;
    if (typeof file.add.stats === 'string' && file.add.stats.length > 0) {
      try {
        parsed = parseJsonLossless(file.add.stats) as FileStats;
      } catch {
        parsed = null; // unreadable stats only lose skipping, never correctness
      }
    }
    this.statsCache.set(file, parsed);
    return parsed ?? undefined;
  }

  /** Number of rows (sum of numRecords), or undefined when some file lacks stats. */
  numRecords(): number | undefined {
    let total = 0;
    for (const f of this.files) {
      const n = this.stats(f)?.numRecords;
      if (typeof n !== 'number') return undefined;
      total += n;
    }
    return total;
  }
}

/** Throws LAKE_UNSUPPORTED_PROTOCOL unless this library may read the table. */
export function checkReadable(protocol: ProtocolAction, where: string): void {
  if (protocol.minReaderVersion > 1) {
    throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `${where} needs reader version ${protocol.minReaderVersion}; this library reads version 1 only`, {
      details: { protocol },
    });
  }
}

/** Throws LAKE_UNSUPPORTED_PROTOCOL unless this library may write the table (DELTA.md §1). */
export function checkWritable(snapshot: Snapshot, where: string): void {
  const p = snapshot.protocol;
  checkReadable(p, where);
  const features = (p.writerFeatures ?? []).filter((f) => f !== 'appendOnly' && f !== 'invariants');
  if (p.minWriterVersion > 2 || features.length > 0) {
    throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `${where} needs writer version ${p.minWriterVersion}${features.length ? ` with features ${features.join(', ')}` : ''}; this library writes version 2 without table features`, {
      details: { protocol: p },
    });
  }
  const withInvariants = snapshot.schema.fields.filter((f) => f.metadata && 'delta.invariants' in f.metadata);
  if (withInvariants.length > 0) {
    throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `${where} has column invariants (${withInvariants.map((f) => f.name).join(', ')}), which this library does not enforce`);
  }
}
