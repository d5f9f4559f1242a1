import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal, TokenAuth } from '../auth/tokens';
import { queryError } from '../errors';

const principals = new WeakMap<FastifyRequest, Principal>();

/** Authenticates every `/v1/` request before its body is parsed or validated. */
export function registerAuth(app: FastifyInstance, auth: TokenAuth): void {
  app.addHook('onRequest', async (request) => {
    // The matched route pattern, not the raw URL: no spelling of a path can reach a /v1 handler
    // without passing here, and unmatched URLs fall through to the 404 handler.
    if (!request.routeOptions.url?.startsWith('/v1/')) return;
    principals.set(request, auth.authenticate(request.headers.authorization));
  });
}

/** The authenticated caller of a `/v1/` request. */
export function principalOf(request: FastifyRequest): Principal {
  const p = principals.get(request);
  if (!p) throw queryError('QUERY_AUTH_MISSING');
  return p;
}

/** Throws QUERY_AUTH_FORBIDDEN unless the caller may read `table`. */
export function requireRead(request: FastifyRequest, table: string): void {
  if (!principalOf(request).canRead(table)) throw queryError('QUERY_AUTH_FORBIDDEN', table, { table });
}
