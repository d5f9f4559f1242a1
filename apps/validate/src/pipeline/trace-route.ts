import { TRACEPARENT_HEADER, extractTraceContext, injectTraceHeaders, type Telemetry } from '@sluice/telemetry';
import type { RawMessage, RoutedRecord } from '../routing/route';

/** The tracing part of telemetry validate uses. */
export type RouteTracer = Pick<Telemetry, 'withSpan'>;

// version-traceid-spanid-flags, lower-case hex (W3C trace context, version 00 layout).
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * True when `value` is a well-formed `traceparent` whose sampled flag (bit 0 of the flags) is
 * set. The flags are looked at first so the common unsampled case costs two byte reads; only a
 * sampled header is checked in full, because a malformed one would otherwise start a new root
 * trace per event instead of being passed through untouched.
 */
export function isSampledTraceparent(value: Buffer | undefined): boolean {
  if (value === undefined || value.length !== 55) return false;
  const flags = (hexDigit(value[53]) << 4) | hexDigit(value[54]);
  if (flags < 0 || (flags & 1) === 0) return false;
  const text = value.toString('latin1');
  return TRACEPARENT.test(text) && text.slice(3, 35) !== ZERO_TRACE && text.slice(36, 52) !== ZERO_SPAN && !text.startsWith('ff');
}

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

/** Value of one lower-case hex digit, or -256 (keeps the combined flags negative) otherwise. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -256;
}
