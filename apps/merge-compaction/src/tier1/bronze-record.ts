import { HEADERS, columnsOf, keyHashOf, type AnyContract, type AvroDecoder } from '@sluice/contracts';
import type { Issue } from '@sluice/errors';
import { sampledTraceparent } from './trace';

/** One consumed valid-topic record, decoded and placed, on its way into bronze. */
export interface BronzeRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly contract: AnyContract;
  /** The decoded event (the contract's latest schema); bronze takes its columns with `toColumns`. */
  readonly event: Record<string, unknown>;
  readonly eventId: string;
  /** ms since epoch. */
  readonly eventTimeMs: number;
  /** Bronze partition values. */
  readonly eventDate: string;
  readonly bucket: number;
  /** Positive murmur2 of the entity key; `bucket = keyHash % contract.buckets` (as `bucketOf`). */
  readonly keyHash: number;
  /** Contract version of the writer schema (drives schema evolution of the tables). */
  readonly writerVersion: number | undefined;
  /** Kafka record timestamp (when validate produced it), ms; freshness is measured from it. */
  readonly producedAtMs: number | undefined;
  /** What the decoded record holds on the V8 heap, estimated ({@link heldBytesOf}); tier 1's memory bounds count it. */
  readonly bytes: number;
  /** The record's `traceparent` when sampled (see `sampledTraceparent`); the merge span's parent. */
  readonly traceparent?: string;
  /** Written back from the DLQ (`sluice-replay-of`): dedup checks bronze for it at any age. */
  readonly replayed?: boolean;
}

/**
 * A record tier 1 sent to the DLQ, kept in the batch in its place: the batch's commit covers its
 * offset without a row. Without it nothing recorded a dead letter as handled when it was the last
 * record of its partition: every restart or rebalance read it and dead-lettered it again, and the
 * partition's lag never reached 0.
 */
export interface SkippedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly contract: AnyContract;
  /** What it holds while buffered (the record itself waits in the DLQ queue, counted there). */
  readonly bytes: number;
  readonly skipped: true;
}

/** What a tier-1 batch holds: rows for bronze, and the places of records sent to the DLQ. */
export type BatchRecord = BronzeRecord | SkippedRecord;

/** Whether `r` is a row for bronze (not a dead letter's place). */
export function isRow(r: BatchRecord): r is BronzeRecord {
  return !('skipped' in r);
}

/**
 * The event times bronze takes, ms: from 1970 (validate's floor; gold's windows divide epoch ms
 * rounding toward zero) through 9999-12-31T23:59:59.999Z (a Delta timestamp's last day, PROTOCOL.md).
 */
const EVENT_TIME_MIN_MS = 0;
const EVENT_TIME_MAX_MS = 253_402_300_799_999;

/** The subset of a consumed message decoding needs. */
export interface RawRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly value: Buffer | null;
  readonly timestamp?: number;
  readonly size: number;
  /** Kafka headers; only a sampled `traceparent` and the replay marker are read. */
  readonly headers?: Readonly<Record<string, Buffer>>;
}

/**
 * Decodes a valid-topic record (Avro, either framing) into a {@link BronzeRecord}. A record that
 * does not decode, or whose contract is not the one of its topic, is a bug upstream: it is
 * returned as issues for the caller to count and log with its coordinates, never thrown.
 */
export function decodeRecord(
  raw: RawRecord,
  expected: AnyContract,
  decoder: AvroDecoder,
): { ok: true; value: BronzeRecord } | { ok: false; issues: Issue[] } {
  if (raw.value === null) return { ok: false, issues: [{ code: 'MERGE_RECORD_EMPTY', path: '', message: 'record has no value' }] };
  const decoded = decoder.decode(raw.value);
  if (!decoded.ok) return decoded;
  if (decoded.value.contract.name !== expected.name) {
    return {
      ok: false,
      issues: [{ code: 'MERGE_CONTRACT_MISMATCH', path: '', message: `record of ${decoded.value.contract.name} on the topic of ${expected.name}` }],
    };
  }
  const event = decoded.value.event as Record<string, unknown> & { event_id: string; event_time: number };
  // A foreign writer's time past what a Delta timestamp (and a JS Date) holds threw on its date
  // here, outside any handler: the process died on it, restarted at the same record, and died again.
  if (!(event.event_time >= EVENT_TIME_MIN_MS && event.event_time <= EVENT_TIME_MAX_MS)) {
    return { ok: false, issues: [{ code: 'MERGE_EVENT_TIME_INVALID', path: '/event_time', message: `${event.event_time} ms is outside 1970-01-01 to 9999-12-31` }] };
  }
  // One hash per event gives both the bucket and the cluster column (same as contracts' bucketOf).
  const keyHash = keyHashOf(expected.entityKey(event));
  return {
    ok: true,
    value: {
      topic: raw.topic,
      partition: raw.partition,
      offset: raw.offset,
      contract: expected,
      event,
      eventId: event.event_id,
      eventTimeMs: event.event_time,
      eventDate: utcDateOf(event.event_time),
      bucket: keyHash % expected.buckets,
      keyHash,
      writerVersion: decoded.value.writerVersion,
      producedAtMs: raw.timestamp,
      bytes: heldBytesOf(expected, raw.size),
      traceparent: sampledTraceparent(raw.headers),
      replayed: raw.headers?.[HEADERS.replayOf] !== undefined,
    },
  };
}

/** Fixed heap of one buffered record, the least one counts at: the {@link BronzeRecord}, the event and payload objects (fitted to the measurements below, rounded up). */
export const RECORD_BASE_BYTES = 256;
/** Heap per column of the contract: a property slot and a string header or boxed number. */
const COLUMN_BYTES = 16;
const recordOverhead = new WeakMap<AnyContract, number>();

/**
 * The V8 heap a decoded record of `contract` holds while tier 1 buffers it, estimated from its
 * Avro size: the decoded strings take about the bytes they took on the wire, and every record
 * carries a fixed cost of objects, property slots and numbers that grows with the contract's
 * columns. Measured 2026-12-02 (`bronze-record.test.ts` checks it against the heap): 447–498
 * bytes for 56–66-byte records of the three contracts, and wire + ~425 bytes as a clickstream
 * page grows to 1 kB. The previous estimate (wire + 64) counted under a third of that, so a 64 MiB
 * buffer bound held ~240 MB of records.
 */
export function heldBytesOf(contract: AnyContract, wireBytes: number): number {
  let overhead = recordOverhead.get(contract);
  if (overhead === undefined) {
    overhead = RECORD_BASE_BYTES + COLUMN_BYTES * columnsOf(contract).length;
    recordOverhead.set(contract, overhead);
  }
  return wireBytes + overhead;
}

let cachedDay = NaN;
let cachedDate = '';

/** `YYYY-MM-DD` (UTC) of an epoch-ms time; cached per day because events mostly share one. */
export function utcDateOf(epochMs: number): string {
  const day = Math.floor(epochMs / 86_400_000);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDate = new Date(day * 86_400_000).toISOString().slice(0, 10);
  }
  return cachedDate;
}
