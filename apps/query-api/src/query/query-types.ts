/** A scalar a client may compare a column with. Longs beyond 2^53 travel as decimal strings. */
export type Scalar = string | number | boolean;

/** The comparison operators of a condition. */
export const OPERATORS = ['=', '!=', '<', '<=', '>', '>=', 'in', 'between', 'is null', 'is not null', 'prefix'] as const;
export type Operator = (typeof OPERATORS)[number];

/** One comparison on one column. `value` is a scalar, an array (`in`, `between`) or absent (`is null`). */
export interface Condition {
  column: string;
  op: Operator;
  value?: Scalar | Scalar[];
}

/** Conditions combined; nesting depth is bounded by the JSON schema. */
export type Filter = Condition | { and: Filter[] } | { or: Filter[] };

/** Conditions in a filter list, however nested. */
export function leafConditions(where: readonly Filter[] | undefined): number {
  let n = 0;
  for (const f of where ?? []) n += 'and' in f ? leafConditions(f.and) : 'or' in f ? leafConditions(f.or) : 1;
  return n;
}

export const AGGREGATE_FUNCTIONS = ['count', 'sum', 'min', 'max', 'avg', 'count_distinct'] as const;
export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];

export interface Aggregate {
  fn: AggregateFunction;
  /** A column, or `*` for `count`. */
  column: string;
  as?: string;
}

/** Bucket widths a time series may use; a closed list so no interval text is ever taken from a client. */
export const BUCKET_INTERVALS = {
  '1s': '1 second',
  '10s': '10 seconds',
  '1m': '1 minute',
  '5m': '5 minutes',
  '15m': '15 minutes',
  '1h': '1 hour',
  '6h': '6 hours',
  '1d': '1 day',
} as const;
export type BucketInterval = keyof typeof BUCKET_INTERVALS;

export interface TimeBucket {
  column: string;
  interval: BucketInterval;
  as?: string;
}

export interface OrderBy {
  column: string;
  dir?: 'asc' | 'desc';
}

/** Which table version to read: a version number or a point in time (ISO-8601). */
export type AsOf = { version: number } | { timestamp: string };

/**
 * Read-your-writes: wait (at most `timeoutMs`) until the table has a version ≥ `version` and every
 * listed txn appId has a committed offset ≥ the given one.
 */
export interface WaitFor {
  version?: number;
  offsets?: Record<string, number>;
  timeoutMs?: number;
}

/** The JSON query body of `POST /v1/tables/:table/query`. */
export interface QueryRequest {
  select?: string[];
  where?: Filter[];
  groupBy?: string[];
  aggregates?: Aggregate[];
  timeBucket?: TimeBucket;
  orderBy?: OrderBy[];
  limit?: number;
  offset?: number;
  asOf?: AsOf;
  waitFor?: WaitFor;
}
