import type { FastifyInstance } from 'fastify';
import { queryError } from '../errors';
import type { DlqMetricsSource } from '../pipeline/dlq-metrics';
import { principalOf } from './auth-hook';

/** `/v1/pipeline/…`: pipeline numbers that do not live in a lake table. */
export function pipelineRoutes(app: FastifyInstance, dlq: DlqMetricsSource | undefined): void {
  app.get(
    '/v1/pipeline/dlq',
    { schema: { tags: ['pipeline'], summary: 'Cumulative dead-letter counts by reason, from validate’s metrics', security: [{ bearer: [] }] } },
    async (request) => {
      principalOf(request); // any valid token: the counts name reasons, not data
      if (!dlq?.configured) throw queryError('QUERY_ROUTE_UNKNOWN', 'no validate metrics endpoints are configured (QUERY_API_DLQ_METRICS_URLS)');
      return dlq.read();
    },
  );
}
