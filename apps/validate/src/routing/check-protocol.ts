import type { ValidationLimits } from '@sluice/contracts';
import type { PackedBytes } from './packed';
import type { RouteIssue } from './route';

/** What the check worker is started with (its `workerData`). */
export interface CheckWorkerSettings {
  readonly validTopicPrefix: string;
  /** Values longer than this are not checked (routing dead-letters them unread). */
  readonly maxEventBytes: number;
  readonly limits: Partial<ValidationLimits>;
}

/** A Confluent schema id the main thread learned from the registry, for the worker's decoder. */
export interface LearnedSchema {
  readonly id: number;
  readonly contract: string;
  readonly schema: object | string;
}

/** One batch to check: its records' values, check headers (CHECK_HEADERS, in order) and times. */
export interface CheckRequest {
  readonly id: number;
  /** The check's clock, ms since epoch. */
  readonly now: number;
  readonly values: PackedBytes;
  /** One packed list per name of CHECK_HEADERS. */
  readonly headers: readonly PackedBytes[];
  /** Each record's timestamp (NaN when it has none). */
  readonly receivedAt: Float64Array<ArrayBuffer>;
  /** Schema ids learned since the last request (all of them for a new worker). */
  readonly learned: readonly LearnedSchema[];
}

/** Per record of a {@link CheckResponse}: how its check went. */
export const CHECK_STATUS = { skipped: 0, ok: 1, failed: 2, threw: 3 } as const;

/** Where a valid record goes: its contract and that contract's valid topic. */
export interface CheckTarget {
  readonly contract: string;
  readonly topic: string;
}

/**
 * The checks of one request, per record in order. An `ok` record's contract and topic are
 * `targets[targetOf[i]]`, its key the next of `keys` and its value the next item of `values`;
 * `failed` and `threw` are listed with their index.
 */
export interface CheckResponse {
  readonly id: number;
  readonly status: Uint8Array<ArrayBuffer>;
  readonly targets: readonly CheckTarget[];
  readonly targetOf: Int16Array<ArrayBuffer>;
  readonly keys: readonly string[];
  readonly values: PackedBytes;
  readonly failed: readonly { readonly index: number; readonly contract?: string; readonly issues: RouteIssue[] }[];
  readonly threw: readonly { readonly index: number; readonly message: string }[];
}

/** A request the worker could not answer at all (a bug: a check's own throw is per record). */
export interface CheckRefusal {
  readonly id: number;
  readonly error: string;
}
