import type { SluiceMetrics } from './metrics';

/**
 * The parts of a fastify request/reply the hook reads, declared structurally so telemetry
 * needs no fastify types at runtime (or at all).
 */
export interface HookRequest {
  readonly method: string;
  readonly routeOptions?: { readonly url?: string };
}
/** See {@link HookRequest}. */
export interface HookReply {
  readonly statusCode: number;
  /** Milliseconds since the request arrived (fastify ≥ 4). */
  readonly elapsedTime: number;
}

/**
 * A fastify `onResponse` hook recording `http_request_duration_seconds` by method, route
 * pattern and status: `app.addHook('onResponse', httpMetricsHook(telemetry.metrics))`.
 * Requests that matched no route are labelled `route="unmatched"` so scanners probing random
 * URLs cannot create one series per URL.
 */
export function httpMetricsHook(metrics: SluiceMetrics): (request: HookRequest, reply: HookReply) => Promise<void> {
  return async (request, reply) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    metrics.httpRequestDuration.record(reply.elapsedTime / 1000, {
      method: request.method,
      route,
      status: reply.statusCode,
    });
  };
}
