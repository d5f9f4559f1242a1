import { HEADERS, isReplayMarker } from '@sluice/contracts';

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

/**
 * The replay marker of a raw record when it is one the DLQ tool could have written
 * (`isReplayMarker`); else undefined and the record is no replay.
 */
export function replayMarkerOf(headers: Record<string, Buffer>): Buffer | undefined {
  const marker = headers[REPLAY_HEADER];
  return marker !== undefined && isReplayMarker(marker) ? marker : undefined;
}
