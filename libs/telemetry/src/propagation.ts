import { type Context, ROOT_CONTEXT, type TextMapGetter, type TextMapSetter, TraceFlags, context, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** An extracted or captured trace position; pass it as `parent` to `withSpan`. Opaque. */
export type TraceContext = Context;

/**
 * A header value as Kafka clients and Node's HTTP module hand it over: string, Buffer, or a
 * list of either (repeated header). Only the first value of a list is used.
 */
export type HeaderValue = string | Buffer | Uint8Array | ReadonlyArray<string | Buffer | Uint8Array> | undefined;
/** A headers object: Kafka message headers or Node HTTP request headers. */
export type HeadersLike = Readonly<Record<string, HeaderValue>>;

/** Name of the W3C trace context header carried on HTTP requests and Kafka records. */
export const TRACEPARENT_HEADER = 'traceparent';
/** Name of the W3C vendor trace state header. */
export const TRACESTATE_HEADER = 'tracestate';

const propagator = new W3CTraceContextPropagator();

const getter: TextMapGetter<HeadersLike> = {
  keys: (carrier) => Object.keys(carrier),
  get(carrier, key) {
    // HTTP lower-cases names; Kafka keeps whatever the producer wrote.
    const raw = carrier[key] ?? findCaseInsensitive(carrier, key);
    const first = Array.isArray(raw) ? raw[0] : raw;
    if (first === undefined) return undefined;
    return typeof first === 'string' ? first : Buffer.from(first as Uint8Array).toString('utf8');
  },
};

const setter: TextMapSetter<Record<string, unknown>> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};

/**
 * Writes `traceparent` (and `tracestate` when set) for `ctx` (default: the active context) into
 * `headers` and returns it. Without a valid span in `ctx` nothing is written.
 */
export function injectTraceHeaders<H extends Record<string, unknown>>(headers: H, ctx: Context = context.active()): H {
  propagator.inject(ctx, headers, setter);
  return headers;
}

/**
 * Like {@link injectTraceHeaders}, but only when the span in `ctx` is sampled. For Kafka records:
 * the services act on a sampled `traceparent` only (see {@link isSampledTraceparent}), and every
 * header costs the consumer a native conversion per record (~3 µs each in
 * @confluentinc/kafka-javascript), so an unsampled context is not worth carrying.
 */
export function injectSampledTraceHeaders<H extends Record<string, unknown>>(headers: H, ctx: Context = context.active()): H {
  const span = trace.getSpanContext(ctx);
  if (span === undefined || (span.traceFlags & TraceFlags.SAMPLED) === 0) return headers;
  return injectTraceHeaders(headers, ctx);
}

/**
 * Reads `traceparent`/`tracestate` from Kafka or HTTP headers. A missing or malformed header
 * yields a context without a parent (the span becomes a new trace root), never an error.
 */
export function extractTraceContext(headers: HeadersLike | undefined): TraceContext {
  if (!headers) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, headers, getter);
}

/** The trace and span id of the active span, or undefined outside any span. */
export function activeTraceIds(): { traceId: string; spanId: string } | undefined {
  const span = trace.getSpan(context.active());
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return trace.isSpanContextValid(span.spanContext()) ? { traceId, spanId } : undefined;
}

function findCaseInsensitive(carrier: HeadersLike, key: string): HeaderValue {
  const lower = key.toLowerCase();
  for (const k of Object.keys(carrier)) if (k.toLowerCase() === lower) return carrier[k];
  return undefined;
}

// version-traceid-spanid-flags, lower-case hex (W3C trace context, version 00 layout).
const TRACEPARENT_FORMAT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * True when `value` (a Kafka header's bytes) is a well-formed `traceparent` whose sampled flag
 * (bit 0 of the flags) is set. The flags are read first, so the common unsampled case costs two
 * byte reads on a per-record path; only a sampled header is checked in full, because a malformed
 * one would otherwise start a new root trace per event instead of being passed through.
 */
export function isSampledTraceparent(value: Uint8Array | undefined): boolean {
  return sampledTraceparentText(value) !== undefined;
}

/** The header's text when {@link isSampledTraceparent} holds, else undefined (decoded once, for callers that keep it). */
export function sampledTraceparentText(value: Uint8Array | undefined): string | undefined {
  if (value === undefined || value.length !== 55) return undefined;
  const flags = (hexDigit(value[53]) << 4) | hexDigit(value[54]);
  if (flags < 0 || (flags & 1) === 0) return undefined;
  const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
  const valid = TRACEPARENT_FORMAT.test(text) && text.slice(3, 35) !== ZERO_TRACE && text.slice(36, 52) !== ZERO_SPAN && !text.startsWith('ff');
  return valid ? text : undefined;
}

/** Value of one lower-case hex digit, or -256 (keeps the combined flags negative) otherwise. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -256;
}
