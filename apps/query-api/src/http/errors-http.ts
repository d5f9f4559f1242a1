import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isSluiceError } from '@sluice/errors';
import { ERROR_CATALOG, type ErrorBody, type QueryErrorCode, queryError } from '../errors';

/** Turns any error into a catalogued JSON answer; the one place HTTP statuses are decided. */
export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const e = translate(err);
  const status = ERROR_CATALOG[e.code].status;
  // The limiter's refusals (QUERY_SATURATED without a cause) are routine under load; the query
  // engine running out of memory (QUERY_SATURATED with the lake's error as cause) is logged.
  const routine = e.code === 'QUERY_SATURATED' && e.cause === undefined;
  if (status >= 500 && !routine) request.log.warn({ err, code: e.code }, 'request failed');
  const retryAfter = e.details.retryAfterSeconds;
  if (typeof retryAfter === 'number') reply.header('retry-after', String(retryAfter));
  const body: ErrorBody = { error: { code: e.code, message: e.message, retryable: e.retryable } };
  const details = { ...e.details };
  delete details.retryAfterSeconds;
  if (Object.keys(details).length > 0) body.error.details = details;
  void reply.status(status).send(body);
}

/**
 * Errors fastify's router raises before any route or hook (a path that is not valid percent-encoded
 * UTF-8, a parameter past the router's length): answered like every other error, not with
 * fastify's own body, which has no `error.code` of the catalog.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail: Record<string, string> = {
    FST_ERR_BAD_URL: 'the path is not valid percent-encoded UTF-8',
    FST_ERR_MAX_PARAM_LENGTH: 'a path parameter is too long',
  };
  errorHandler(queryError('QUERY_INVALID', detail[err.code] ?? err.message, { cause: err.code }), request, reply);
}

function translate(err: unknown) {
  if (isSluiceError(err) && err.code in ERROR_CATALOG) return err as ReturnType<typeof queryError>;
  const fe = err as FastifyError & { validation?: { instancePath?: string; message?: string; keyword?: string }[] };
  if (fe && Array.isArray(fe.validation)) {
    const issues = fe.validation.slice(0, 10).map((v) => ({
      path: `${fe.validationContext ?? ''}${v.instancePath ?? ''}`,
      keyword: v.keyword,
      message: v.message,
    }));
    return queryError('QUERY_INVALID', fe.message, { issues });
  }
  const code: Record<string, QueryErrorCode> = {
    FST_ERR_CTP_BODY_TOO_LARGE: 'QUERY_BODY_TOO_LARGE',
    FST_ERR_CTP_INVALID_MEDIA_TYPE: 'QUERY_MEDIA_UNSUPPORTED',
    FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'QUERY_INVALID',
    FST_ERR_CTP_EMPTY_JSON_BODY: 'QUERY_INVALID',
    FST_ERR_CTP_INVALID_JSON_BODY: 'QUERY_INVALID',
  };
  if (fe && typeof fe.code === 'string' && code[fe.code]) return queryError(code[fe.code], fe.message);
  // A body that is not JSON at all comes as a SyntaxError with statusCode 400.
  if (fe && fe.statusCode === 400) return queryError('QUERY_INVALID', fe.message);
  // The cause's code, not its message: that names storage URIs, paths and endpoints.
  if (isSluiceError(err) && err.retryable) return queryError('QUERY_LAKE_UNAVAILABLE', undefined, { cause: err.code, retryAfterSeconds: 1 }, err);
  return queryError('QUERY_INTERNAL', undefined, undefined, err);
}
