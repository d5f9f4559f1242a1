import { HEADERS } from '@sluice/contracts';

/**
 * Kafka header names validate reads and writes. A DLQ record is the original record — same key,
 * same value bytes, same headers — plus the `sluice-dlq-*` headers below, so a replay is a copy
 * and nothing about the event has to be re-encoded. The names are the contracts' HEADERS, which
 * tools/src/dlq reads too.
 */
export const DLQ_HEADERS = {
  reason: HEADERS.dlqReason,
  sourceTopic: HEADERS.dlqSourceTopic,
  sourcePartition: HEADERS.dlqSourcePartition,
  sourceOffset: HEADERS.dlqSourceOffset,
  detail: HEADERS.dlqDetail,
  contract: HEADERS.dlqContract,
  producer: HEADERS.dlqProducer,
  time: HEADERS.dlqTime,
} as const;

/**
 * Headers ingest adds to raw records: the producer identity (from its API key) always, the
 * contract only where the bytes alone do not name it (see HEADERS in @sluice/contracts).
 */
export const INGEST_HEADERS = { producer: HEADERS.producer, contract: HEADERS.contract } as const;

/** The DLQ tool's marker on a replayed raw record; validate carries it onto the valid record. */
export const REPLAY_HEADER = HEADERS.replayOf;

/** What the DLQ tool writes: `<dlq topic>/<partition>/<offset>` (a Kafka topic name is 1–249 of these characters). */
const REPLAY_MARKER = /^[A-Za-z0-9._-]{1,249}\/\d{1,10}\/\d{1,19}$/;

/**
 * The replay marker of a raw record when it is one the DLQ tool could have written; else
 * undefined and the record is no replay. A producer writing to raw directly may set the header to
 * anything: a megabyte of it, carried onto the valid record, made that record too large to
 * produce, and the batch failed at every retry (a stopped partition, a crash loop).
 */
export function replayMarkerOf(headers: Record<string, Buffer>): Buffer | undefined {
  const marker = headers[REPLAY_HEADER];
  return marker !== undefined && marker.length <= 300 && REPLAY_MARKER.test(marker.toString('latin1')) ? marker : undefined;
}
