/** `protocol` action. This library reads (1,*) and writes (1,2) with no table features. */
export interface ProtocolAction {
  minReaderVersion: number;
  minWriterVersion: number;
  readerFeatures?: string[];
  writerFeatures?: string[];
}

/** `metaData` action; a new one replaces the previous wholesale, `id` never changes. */
export interface MetadataAction {
  id: string;
  name?: string | null;
  description?: string | null;
  format: { provider: string; options: Record<string, string> };
  /** The schema as a JSON string (never an object). */
  schemaString: string;
  partitionColumns: string[];
  configuration: Record<string, string>;
  /** ms since epoch. */
  createdTime?: number | null;
}

/** `add` action: one live data file. */
export interface AddAction {
  /** URI-encoded path relative to the table root; removes copy this string exactly. */
  path: string;
  /** Every partition column, value as Delta partition string or null. */
  partitionValues: Record<string, string | null>;
  /** Bytes. */
  size: number;
  /** ms since epoch. */
  modificationTime: number;
  dataChange: boolean;
  /** Statistics as a JSON string (numRecords, minValues, maxValues, nullCount). */
  stats?: string | null;
  tags?: Record<string, string | null> | null;
}

/**
 * An `add` action's partition values as read from the log: none given is none, and an empty
 * string is null ("an empty string for any type translates to a null partition value", PROTOCOL.md;
 * other engines write it so). Taken as written, '' failed the cast of an integer partition and
 * counted as another partition than null in merges and conflict checks.
 */
export function partitionValuesOf(raw: Record<string, string | null> | null | undefined): Record<string, string | null> {
  const values: Record<string, string | null> = {};
  for (const [column, value] of Object.entries(raw ?? {})) values[column] = value === '' ? null : value;
  return values;
}

/** `remove` action: a tombstone for a previously added file. */
export interface RemoveAction {
  path: string;
  /** ms since epoch. */
  deletionTimestamp?: number | null;
  dataChange: boolean;
  extendedFileMetadata?: boolean | null;
  partitionValues?: Record<string, string | null> | null;
  size?: number | null;
}

/** `txn` action: the latest version per appId wins. `version` is a long (bigint beyond 2^53). */
export interface TxnAction {
  appId: string;
  version: number | bigint;
  /** ms since epoch. */
  lastUpdated?: number | null;
}

/** `commitInfo`: free-form provenance, first line of every commit this library writes. */
export type CommitInfo = Record<string, unknown>;

/** One line of a commit file. */
export type Action =
  | { protocol: ProtocolAction }
  | { metaData: MetadataAction }
  | { add: AddAction }
  | { remove: RemoveAction }
  | { txn: TxnAction }
  | { commitInfo: CommitInfo };

/** The actions of one commit, grouped. */
export interface CommitActions {
  version: number;
  commitInfo?: CommitInfo;
  protocol?: ProtocolAction;
  metaData?: MetadataAction;
  adds: AddAction[];
  removes: RemoveAction[];
  txns: TxnAction[];
}

/** `_delta_log/<20-digit version>`: what every log key of that version starts with, then a `.`. */
export function versionKeyStem(version: number): string {
  return `_delta_log/${String(version).padStart(20, '0')}`;
}

/** `_delta_log/<20-digit version>.json` */
export function commitKey(version: number): string {
  return `${versionKeyStem(version)}.json`;
}

/** `_delta_log/<20-digit version>.checkpoint.parquet` */
export function checkpointKey(version: number): string {
  return `${versionKeyStem(version)}.checkpoint.parquet`;
}

/** The hint file naming the newest checkpoint. */
export const LAST_CHECKPOINT_KEY = '_delta_log/_last_checkpoint';
