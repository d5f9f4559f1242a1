import { SluiceError } from '@sluice/errors';

/**
 * The closed catalog of errors query-api answers with. Every code has one HTTP status and one
 * meaning; docs/design/query-api.md lists the same rows (a test keeps the two in step).
 */
export const ERROR_CATALOG = {
  QUERY_AUTH_MISSING: { status: 401, retryable: false, message: 'a bearer token is required' },
  QUERY_AUTH_INVALID: { status: 401, retryable: false, message: 'the bearer token is not valid' },
  QUERY_AUTH_FORBIDDEN: { status: 403, retryable: false, message: 'the token has no read scope for this table' },
  QUERY_TABLE_UNKNOWN: { status: 404, retryable: false, message: 'no such table' },
  QUERY_COLUMN_UNKNOWN: { status: 404, retryable: false, message: 'no such column in the table' },
  QUERY_ENTITY_NOT_FOUND: { status: 404, retryable: false, message: 'no row with this entity key' },
  QUERY_ROUTE_UNKNOWN: { status: 404, retryable: false, message: 'no such route' },
  QUERY_VERSION_UNKNOWN: { status: 404, retryable: false, message: 'the table has no such version (or it was cleaned up)' },
  QUERY_INVALID: { status: 400, retryable: false, message: 'the request does not match its schema' },
  QUERY_SHAPE_INVALID: { status: 400, retryable: false, message: 'the query is well-formed but not meaningful' },
  QUERY_VALUE_INVALID: { status: 400, retryable: false, message: 'a value does not fit the column type' },
  QUERY_TOO_COMPLEX: { status: 400, retryable: false, message: 'the query exceeds a complexity limit' },
  QUERY_LOOKUP_UNSUPPORTED: { status: 400, retryable: false, message: 'this table has no entity key to look up' },
  QUERY_BODY_TOO_LARGE: { status: 413, retryable: false, message: 'the request body is too large' },
  QUERY_MEDIA_UNSUPPORTED: { status: 415, retryable: false, message: 'send application/json' },
  QUERY_TIMEOUT: { status: 504, retryable: true, message: 'the query took longer than the timeout' },
  QUERY_WAIT_TIMEOUT: { status: 504, retryable: true, message: 'the table did not reach the requested version or offsets in time' },
  QUERY_SATURATED: { status: 503, retryable: true, message: 'too many queries in flight; retry after the given delay' },
  QUERY_NOT_READY: { status: 503, retryable: true, message: 'the service is starting or shutting down' },
  QUERY_LAKE_UNAVAILABLE: { status: 503, retryable: true, message: 'the lake storage could not be read' },
  QUERY_UPSTREAM_UNAVAILABLE: { status: 503, retryable: true, message: 'a pipeline service the answer comes from did not answer' },
  QUERY_TABLE_UNREADABLE: { status: 500, retryable: false, message: 'the table cannot be read here: its protocol, log or schema is not one this service reads' },
  QUERY_INTERNAL: { status: 500, retryable: false, message: 'unexpected error' },
} as const satisfies Record<string, { status: number; retryable: boolean; message: string }>;

/** A code of {@link ERROR_CATALOG}. */
export type QueryErrorCode = keyof typeof ERROR_CATALOG;

/** Raises a catalogued error; `message` adds the specifics to the catalog's general words. */
export function queryError(code: QueryErrorCode, detail?: string, details?: Record<string, unknown>, cause?: unknown): SluiceError<QueryErrorCode> {
  const entry = ERROR_CATALOG[code];
  return new SluiceError(code, detail ? `${entry.message}: ${detail}` : entry.message, {
    retryable: entry.retryable,
    details,
    cause,
  });
}

/** The JSON body of every error answer. */
export interface ErrorBody {
  error: { code: QueryErrorCode; message: string; retryable: boolean; details?: Record<string, unknown> };
}

/** HTTP status of a catalogued code. */
export function statusOf(code: QueryErrorCode): number {
  return ERROR_CATALOG[code].status;
}
