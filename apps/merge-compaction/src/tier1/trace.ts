import { TRACEPARENT_HEADER, extractTraceContext, type Telemetry } from '@sluice/telemetry';
import type { BronzeRecord } from './bronze-record';

/** The tracing part of telemetry tier 1 uses. */
export type Tier1Tracer = Pick<Telemetry, 'recordSpan'>;

// version-traceid-spanid-flags, lower-case hex (W3C trace context, version 00 layout).
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The record's `traceparent` when it is well-formed and sampled, else undefined. The flags are
 * read first, so an unsampled record costs two byte reads (this runs per consumed record); a
 * malformed header is ignored rather than starting a new root trace per event.
 */
export function sampledTraceparent(headers: Readonly<Record<string, Buffer>> | undefined): Buffer | undefined {
  const value = headers?.[TRACEPARENT_HEADER];
  if (value === undefined || value.length !== 55) return undefined;
  const flags = (hexDigit(value[53]) << 4) | hexDigit(value[54]);
  if (flags < 0 || (flags & 1) === 0) return undefined;
  const text = value.toString('latin1');
  const ok = TRACEPARENT.test(text) && text.slice(3, 35) !== ZERO_TRACE && text.slice(36, 52) !== ZERO_SPAN && !text.startsWith('ff');
  return ok ? value : undefined;
}

/**
 * One `merge.bronze-append` span per sampled record of a bronze commit that succeeded, each a
 * child of the record's validate span, so every sampled event's trace ends in the commit that
 * made it durable. (One span per commit with links would leave all but one trace without a
 * merge step.) `written` tells kept records from duplicates, whose offsets the commit stored
 * but whose rows it did not write.
 */
export function traceBronzeAppend(
  tracer: Tier1Tracer,
  records: readonly BronzeRecord[],
  written: ReadonlySet<BronzeRecord>,
  commit: { table: string; version: number; durationMs: number },
): number {
  let traced = 0;
  for (const r of records) {
    if (r.traceparent === undefined) continue;
    tracer.recordSpan('merge.bronze-append', commit.durationMs, {
      parent: extractTraceContext({ [TRACEPARENT_HEADER]: r.traceparent }),
      kind: 'consumer',
      attributes: {
        table: commit.table,
        version: commit.version,
        topic: r.topic,
        partition: r.partition,
        offset: r.offset,
        outcome: written.has(r) ? 'written' : 'duplicate',
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
