import { SluiceError } from '@sluice/errors';

/** Every error code libs/lake raises, with whether retrying the same call may succeed. */
export const LAKE_ERRORS = {
  /** An object or table is absent (get of a missing key, open of a path without `_delta_log`). */
  LAKE_NOT_FOUND: { retryable: false },
  /** createTable on a path that already holds a table. */
  LAKE_TABLE_EXISTS: { retryable: false },
  /** A concurrent commit conflicts with this one (DELTA.md §6); re-read and re-plan. */
  LAKE_COMMIT_CONFLICT: { retryable: true },
  /** A log file is torn, empty, not JSON, or the versions have a gap. */
  LAKE_LOG_CORRUPT: { retryable: false },
  /** A live file named by the log is missing from storage. */
  LAKE_DATA_FILE_MISSING: { retryable: false },
  /** The table uses protocol versions or features this library does not support. */
  LAKE_UNSUPPORTED_PROTOCOL: { retryable: false },
  /** A schema, column name, type or schema change is invalid. */
  LAKE_SCHEMA_INVALID: { retryable: false },
  /** The requested version or timestamp is not in the log (never written, or cleaned up). */
  LAKE_VERSION_NOT_FOUND: { retryable: false },
  /** A write would change data in a table with `delta.appendOnly=true`. */
  LAKE_APPEND_ONLY: { retryable: false },
  /**
   * A write's `expectedTxns` did not hold: at the snapshot the commit was built on, or in a
   * commit that won a race, an appId's txn version differs from the expected one (another writer
   * — e.g. a zombie after a rebalance — moved it). Retrying the same call cannot succeed: re-read
   * the offsets and re-plan (kafka-delta-ingest's ConflictingOffsets).
   */
  LAKE_TXN_MISMATCH: { retryable: false },
  /** Rows or options given to a write are invalid. */
  LAKE_INVALID_INPUT: { retryable: false },
  /** A query failed (bad SQL, forbidden statement, DuckDB error). */
  LAKE_QUERY_FAILED: { retryable: false },
  /**
   * A query ran past its `timeoutMs` and was interrupted (DuckDB stopped it; its resources are
   * free). Retryable: the same query may finish under less load or with a longer timeout.
   */
  LAKE_QUERY_TIMEOUT: { retryable: true },
  /**
   * DuckDB could not get memory within its `memory_limit` (and could not spill). Retryable: the
   * same statement may fit once concurrent work has finished; if it never does, the limit is too
   * low for the work (raise it, or give DuckDB a temp directory to spill to).
   */
  LAKE_OUT_OF_MEMORY: { retryable: true },
  /** Storage I/O failed for a reason other than absence; may be transient. */
  LAKE_STORAGE_UNAVAILABLE: { retryable: true },
} as const;

/** One of the codes in {@link LAKE_ERRORS}. */
export type LakeErrorCode = keyof typeof LAKE_ERRORS;

/** Builds a SluiceError with a lake code; the retryable flag comes from the catalog. */
export function lakeError(
  code: LakeErrorCode,
  message: string,
  options: { cause?: unknown; details?: Record<string, unknown> } = {},
): SluiceError<LakeErrorCode> {
  return new SluiceError(code, message, { retryable: LAKE_ERRORS[code].retryable, ...options });
}

/** The message of a thrown value. Not `instanceof Error`: node-api's errors may come from another realm. */
export function errorMessage(cause: unknown): string {
  const message = (cause as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : String(cause);
}
