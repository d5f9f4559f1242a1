import { SluiceError } from '@sluice/errors';

/** Every error code merge-compaction raises itself, with whether retrying may succeed. */
export const MERGE_ERRORS = {
  /** Another worker wrote this partition's offsets since this worker resumed it (zombie guard). */
  MERGE_OFFSETS_MOVED: { retryable: false },
  /** A valid-topic record has no value. */
  MERGE_RECORD_EMPTY: { retryable: false },
  /** A valid-topic record belongs to another contract than its topic's. */
  MERGE_CONTRACT_MISMATCH: { retryable: false },
  /** A valid-topic record's event_time lies before 1970 (validate's floor) or past what a Delta timestamp holds (9999). */
  MERGE_EVENT_TIME_INVALID: { retryable: false },
  /** Storage is slow or failing; the step is retried with backoff. */
  MERGE_STORAGE_RETRY: { retryable: true },
  /** The configuration names a contract that does not exist. */
  MERGE_CONTRACT_UNKNOWN: { retryable: false },
  /**
   * A gold table lacks columns its aggregate now declares (a new measure, group or window):
   * stored windows cannot gain them incrementally, so the aggregate needs a new table name,
   * which is built from bronze's whole history.
   */
  MERGE_GOLD_SHAPE_CHANGED: { retryable: false },
  /**
   * A bronze or silver table records another bucket count than its contract now declares: its
   * entities would be looked for in other buckets than the ones holding them.
   */
  MERGE_BUCKETS_CHANGED: { retryable: false },
} as const;

/** One of {@link MERGE_ERRORS}. */
export type MergeErrorCode = keyof typeof MERGE_ERRORS;

/** A SluiceError with a merge-compaction code; retryable from the catalog. */
export function mergeError(code: MergeErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
  return new SluiceError(code, message, { retryable: MERGE_ERRORS[code].retryable, ...options });
}
