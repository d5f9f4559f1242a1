// Public API of @sluice/lake: Delta Lake tables (reader 1 / writer 2) written with DuckDB.
export type { ListOptions, Storage, StoredObject } from './storage/storage';
export { LocalStorage } from './storage/local-storage';
export { PrefixedStorage } from './storage/prefixed-storage';
export { tableStorageFactory, isS3Root, type LakeRootS3Options, type TableStorageFactory } from './storage/lake-root';
export { FileLease } from './storage/file-lease';
export { claimScratchDir, type ScratchClaim } from './storage/scratch';
export { S3Storage, LocalFileCache, PINNED_OVERSHOOT, parseS3Uri, type S3StorageOptions, type S3CommitMode, type LocalFileCacheOptions } from './storage/s3-storage';
export { LAKE_ERRORS, type LakeErrorCode } from './errors';
export { LAKE_CHANNELS, type CommitEvent, type ConflictEvent, type MergeEvent, type CompactionEvent, type VacuumEvent, type CheckpointEvent, type CheckpointFailedEvent, type TableStatsEvent } from './events';
export {
  LakeTable,
  type LakeTableOptions,
  type CreateTableSpec,
  type TxnSpec,
  type AppendResult,
  type AppendOptions,
  type MergeSpec,
  type MergeResult,
  type AmortiseOptions,
  TAIL_PREFIX,
  MIN_VACUUM_RETENTION_MS,
  type CompactOptions,
  type CompactResult,
  type VacuumOptions,
  type VacuumResult,
  type HistoryEntry,
} from './table/lake-table';
export type { CommitResult } from './table/commit';
export { TIME_UNITS, type SortKey, type TimeUnit } from './table/row-order';
export type { ColumnarSource, WriteSource } from './table/ingest';
export type { ColumnSpec, DeltaType, DeltaPrimitiveType, DeltaField, TableSchema } from './table/schema';
export { Snapshot, TABLE_PROPERTIES, type LiveFile, type FileStats } from './log/snapshot';
export type { SnapshotTarget } from './log/log-reader';
export type { AddAction, RemoveAction, TxnAction, MetadataAction, ProtocolAction, CommitInfo } from './log/actions';
export { configureSharedDuckDB, sharedDuckDBMemoryBytes, type DuckDBResourceOptions } from './duck';
export { LakeQueryEngine, LakeSession, type QueryEngineOptions, type ViewSpec, type PendingSpec, type QueryParams, type QueryOptions } from './query/query-engine';
export { parseJsonLossless, stringifyJson } from './log/json';
