/**
 * Object storage under one table root. Keys are relative, '/'-separated paths
 * (e.g. `_delta_log/00000000000000000007.json`, `bucket=3/part-<uuid>.snappy.parquet`).
 * Implementations: local directory (`LocalStorage`) and S3 (`S3Storage`).
 */
export interface Storage {
  /** A description for logs and errors, e.g. `file:///data/lake/orders_silver` or `s3://bucket/prefix`. */
  readonly uri: string;
  /** Whole object; throws LAKE_NOT_FOUND when absent. */
  get(key: string): Promise<Uint8Array>;
  /** Whole object, or undefined when absent. */
  getIfExists(key: string): Promise<Uint8Array | undefined>;
  /** Writes (or overwrites) an object. For data files, whose names are unique, and hint files. */
  put(key: string, body: Uint8Array): Promise<void>;
  /**
   * Optional: stores the local file `localFile` under `key` and may consume (move) it. Lets DuckDB
   * write Parquet to disk once instead of the lake buffering it; when absent the lake reads the
   * file and calls `put`.
   */
  putFile?(key: string, localFile: string): Promise<void>;
  /**
   * Atomic put-if-absent: creates `key` only if nothing exists there. Resolves true when this call
   * created it, false when another writer got there first. Never exposes a partial object.
   */
  putIfAbsent(key: string, body: Uint8Array): Promise<boolean>;
  /**
   * Keys under `prefix` (recursive), with size and last-modified time in ms, sorted by key; with
   * `limit`, only the first that many (at most).
   */
  list(prefix: string, options?: ListOptions): Promise<StoredObject[]>;
  /** Deletes objects; absent keys are ignored. */
  delete(keys: string[]): Promise<void>;
  /** Size and mtime, or undefined when absent. */
  head(key: string): Promise<StoredObject | undefined>;
  /**
   * A local filesystem path holding the object's bytes for DuckDB to read: the file itself for
   * local storage, a cached download (bounded cache) for S3.
   */
  localPath(key: string): Promise<string>;
}

/** Options of {@link Storage.list}. */
export interface ListOptions {
  /** Return at most this many keys, the first in key order (a log's oldest file without listing it all). */
  limit?: number;
  /**
   * Leave out keys under these prefixes, without reading them where the store allows (a local
   * directory is not entered; S3 lists on past the prefix): vacuum skips a month of log files.
   */
  exclude?: readonly string[];
  /**
   * Only keys after this one, in key order (S3's StartAfter): the newest part of a log without
   * listing, or on local disk stat-ing, the versions before it. A saving, not a filter to rely
   * on: a Storage that does not know the option lists from the prefix's start, and callers take
   * earlier keys as they would from a full listing.
   */
  startAfter?: string;
}

/** One object in a listing. */
export interface StoredObject {
  key: string;
  size: number;
  /** Last modification, ms since epoch. */
  modifiedMs: number;
}
