import { TRACEPARENT_HEADER, extractTraceContext, sampledTraceparentText, type Telemetry } from '@sluice/telemetry';
import type { BronzeRecord } from './bronze-record';

/** The tracing part of telemetry tier 1 uses. */
export type Tier1Tracer = Pick<Telemetry, 'recordSpan'>;

/**
 * The record's `traceparent` when it is well-formed and sampled, else undefined. The flags are
 * read first, so an unsampled record costs two byte reads (this runs per consumed record); a
 * malformed header is ignored rather than starting a new root trace per event. Kept as text: a
 * header Buffer costs ~270 bytes of heap with its own ArrayBuffer, the 55-character string ~70,
 * and tier 1 holds one per buffered record when every trace is sampled (docs/bench/e2e.md).
 */
export function sampledTraceparent(headers: Readonly<Record<string, Buffer>> | undefined): string | undefined {
  return sampledTraceparentText(headers?.[TRACEPARENT_HEADER]);
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
