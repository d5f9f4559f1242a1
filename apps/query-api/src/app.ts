import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TokenAuth } from './auth/tokens';
import { queryError } from './errors';
import { errorHandler, frameworkErrorHandler } from './http/errors-http';
import type { EntityLookup, QueryService } from './query/query-service';
import type { DlqMetricsSource } from './pipeline/dlq-metrics';
import { registerAuth } from './routes/auth-hook';
import { pipelineRoutes } from './routes/pipeline';
import { type DashboardSettings, dashboardRoutes } from './routes/dashboard';
import { tableRoutes } from './routes/tables';

/** Everything the HTTP layer needs, built by main.ts (or a test). */
export interface AppDeps {
  service: QueryService;
  auth: TokenAuth;
  /** Entity-key lookups by table name; tables without one answer QUERY_LOOKUP_UNSUPPORTED. */
  lookups: Record<string, EntityLookup>;
  dashboard: DashboardSettings;
  /** validate's DLQ counters for `/v1/pipeline/dlq` and the dashboard, when configured. */
  dlqMetrics?: DlqMetricsSource;
  /** False while starting or draining: /readyz answers 503. */
  isReady: () => boolean;
  /** True once shutdown began: every request but /healthz gets 503 QUERY_NOT_READY with Retry-After. */
  isDraining?: () => boolean;
  /** An `onResponse` hook (HTTP metrics). */
  onResponse?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  bodyLimit: number;
  /** The service's logger (libs/telemetry: its fields, trace ids and secret redaction); none without it. */
  logger?: FastifyBaseLogger;
}

/** Builds the fastify app without listening; tests drive it with `app.inject()`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // The service's own logger: fastify's default one would print numeric levels, no service
    // field and no redaction (a failed request's error could carry an Authorization header).
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: deps.bodyLimit,
    // Reject what the schema does not name instead of silently dropping it, and never coerce a
    // body value into another type (null would become "" and match the wrong rows).
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // While draining, requests on open keep-alive connections get the catalog's 503 from the
    // onRequest hook below (fastify's own had no error code and no Retry-After).
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    // The router refused path parameters over 100 characters with a bare 414; entity keys may
    // have 1,024 (routes/tables.ts), up to 12 bytes each when percent-encoded UTF-8.
    routerOptions: { maxParamLength: 12 * 1024 },
    // Per-request lines would dominate the logs of a polled API; metrics count requests instead.
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setErrorHandler(errorHandler);
  // Only JSON bodies: a text/plain body would otherwise reach the schema as a string.
  app.removeContentTypeParser('text/plain');
  app.setNotFoundHandler((request) => {
    throw queryError('QUERY_ROUTE_UNKNOWN', `${request.method} ${request.url.split('?')[0]}`);
  });

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Sluice query-api',
        version: '1',
        description:
          'Read-only queries over Sluice lake tables. Every answer carries `freshness` (table version, commit time, ' +
          'max event time, committed offsets). Errors: `{ "error": { code, message, retryable, details? } }`; the codes ' +
          'are listed in docs/design/query-api.md.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  if (deps.onResponse) app.addHook('onResponse', deps.onResponse);
  // While draining, answers close their keep-alive connection: close() waits for connections
  // that finish after it was called, and an idle keep-alive one would hold shutdown until timeout.
  app.addHook('onSend', async (_request, reply) => {
    if (!deps.isReady()) void reply.header('connection', 'close');
  });
  app.addHook('onRequest', async (request) => {
    if (deps.isDraining?.() && request.routeOptions.url !== '/healthz') throw queryError('QUERY_NOT_READY', 'draining', { retryAfterSeconds: 1 });
  });
  registerAuth(app, deps.auth);

  app.get('/healthz', { schema: { tags: ['ops'], summary: 'Liveness' } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { tags: ['ops'], summary: 'Readiness: 503 while starting or draining' } }, async () => {
    if (!deps.isReady()) throw queryError('QUERY_NOT_READY', undefined, { retryAfterSeconds: 1 });
    return { status: 'ready' };
  });

  tableRoutes(app, deps.service, deps.lookups);
  pipelineRoutes(app, deps.dlqMetrics);
  dashboardRoutes(app, deps.dashboard);
  return app;
}
