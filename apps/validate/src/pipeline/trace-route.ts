import { TRACEPARENT_HEADER, extractTraceContext, injectTraceHeaders, isSampledTraceparent, type Telemetry } from '@sluice/telemetry';
import type { RawMessage, RoutedRecord } from '../routing/route';

/** The tracing part of telemetry validate uses. */
export type RouteTracer = Pick<Telemetry, 'withSpan'>;

/**
 * For each record whose raw `traceparent` is sampled: records a `validate.route` consumer span,
 * child of the upstream (ingest) span, and points the output record's `traceparent` at it so
 * merge-compaction continues the same trace. Other records are left exactly as routed.
 * `routed[i]` must be the routing of `batch[i]` (processBatch's invariant).
 */
export function traceRouted(tracer: RouteTracer, batch: readonly RawMessage[], routed: readonly RoutedRecord[]): number {
  let traced = 0;
  for (let i = 0; i < batch.length; i++) {
    const msg = batch[i];
    const header = msg.headers[TRACEPARENT_HEADER];
    if (!isSampledTraceparent(header)) continue;
    const out = routed[i];
    tracer.withSpan('validate.route', () => injectTraceHeaders(out.headers), {
      parent: extractTraceContext(msg.headers),
      kind: 'consumer',
      attributes: {
        contract: out.contract ?? 'unknown',
        outcome: out.outcome,
        topic: msg.topic,
        partition: msg.partition,
        offset: msg.offset,
        ...(out.reason ? { reason: out.reason } : {}),
      },
    });
    traced++;
  }
  return traced;
}
