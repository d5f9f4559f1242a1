import { HEADERS, MAX_REPLAY_MARKER_BYTES } from './topics';

/** Most bytes of a DLQ record's detail header, so a record with many issues still fits a Kafka message. */
export const MAX_DLQ_DETAIL_BYTES = 8 * 1024;

/**
 * Most bytes of a DLQ record (key, value, header names and values), under the producer's and
 * the broker's default message limits (1,000,000 and 1,048,588 bytes) with room for the record's
 * framing. A raw record close to the broker's limit, plus the DLQ headers, would not fit: its
 * produce fails for good, and the consumer that must write it would retry it forever.
 */
export const MAX_DLQ_RECORD_BYTES = 900_000;

/** Longest key a cut DLQ record keeps. */
const MAX_CUT_KEY_BYTES = 1024;
/** The namespace of the DLQ's own headers (every `dlq*` name of HEADERS). */
export const DLQ_HEADER_PREFIX = 'sluice-dlq-';

/** Longest `sluice-dlq-producer` value. */
const MAX_DLQ_PRODUCER_CHARS = 256;
/** Bytes Kafka's record format adds per header beside its name and value (length varints), at most. */
const HEADER_FRAMING_BYTES = 10;

/** One problem as a DLQ record's detail lists it. */
export interface DeadLetterIssue {
  readonly code: string;
  readonly path: string;
  readonly message: string;
}

/** What a DLQ record says beside the original record. */
export interface DeadLetterFacts {
  /** Reason code (the first issue's code, or the writer's own code). */
  readonly reason: string;
  readonly issues: readonly DeadLetterIssue[];
  /** Where the original record was read. */
  readonly source: { readonly topic: string; readonly partition: number; readonly offset: number };
  /** Contract the record was for, when known. */
  readonly contract?: string;
  /** When the record was dead-lettered, epoch ms. */
  readonly now: number;
}

/**
 * The headers of a DLQ record: the original record's headers, then the `sluice-dlq-*` headers
 * (HEADERS). validate and merge-compaction write them alike, so the DLQ tool lists, shows and
 * replays both the same way. The producer is ingest's `sluice-producer` header, or `unknown`.
 * An original header in the DLQ's own namespace is not kept: a producer writing to raw directly
 * could otherwise forge `sluice-dlq-truncated` (the tool would never replay the record) or file
 * it under another contract. A name the original repeats keeps every value, in order
 * (`repeated`: the consumer's `repeatedHeaders`); the producer reads its last value.
 */
export function deadLetterHeaders(original: Readonly<Record<string, Buffer>>, facts: DeadLetterFacts, repeated?: Readonly<Record<string, readonly Buffer[]>>): DeadLetterHeaders {
  const headers: DeadLetterHeaders = Object.create(null);
  for (const [name, value] of Object.entries(original)) if (!name.startsWith(DLQ_HEADER_PREFIX)) headers[name] = repeated?.[name] ?? value;
  headers[HEADERS.dlqReason] = facts.reason;
  headers[HEADERS.dlqDetail] = dlqDetail(facts.issues);
  headers[HEADERS.dlqSourceTopic] = facts.source.topic;
  headers[HEADERS.dlqSourcePartition] = String(facts.source.partition);
  headers[HEADERS.dlqSourceOffset] = String(facts.source.offset);
  // ingest's producer names are short; a direct producer may send anything, so it is capped.
  headers[HEADERS.dlqProducer] = original[HEADERS.producer]?.toString('utf8').slice(0, MAX_DLQ_PRODUCER_CHARS) ?? 'unknown';
  headers[HEADERS.dlqTime] = new Date(facts.now).toISOString();
  if (facts.contract !== undefined) headers[HEADERS.dlqContract] = facts.contract;
  return headers;
}

/** The issues as JSON, cut to whole issues under {@link MAX_DLQ_DETAIL_BYTES}, saying how many were cut. */
export function dlqDetail(issues: readonly DeadLetterIssue[]): string {
  let out = JSON.stringify(issues);
  let kept = issues.length;
  while (Buffer.byteLength(out) > MAX_DLQ_DETAIL_BYTES && kept > 1) {
    kept = Math.ceil(kept / 2);
    out = JSON.stringify([...issues.slice(0, kept), { code: 'TRUNCATED', path: '', message: `${issues.length - kept} more issues` }]);
  }
  if (Buffer.byteLength(out) > MAX_DLQ_DETAIL_BYTES) {
    out = JSON.stringify([{ code: issues[0].code, path: issues[0].path.slice(0, 200), message: issues[0].message.slice(0, 1000) }]);
  }
  return out;
}

/** A DLQ record's headers by name; a list is a name the original record repeats, every value in order. */
export type DeadLetterHeaders = Record<string, string | Buffer | readonly Buffer[]>;

/** A record as the DLQ topic gets it. */
export interface DeadLetterRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: DeadLetterHeaders;
}

/**
 * The DLQ record of `original`: its key, bytes and headers with the `sluice-dlq-*` headers added
 * ({@link deadLetterHeaders}). A record over {@link MAX_DLQ_RECORD_BYTES} is cut to fit: the
 * original headers are dropped and the key cut when they are large, then the value is cut, and
 * `sluice-dlq-truncated` says what the original sizes were. The original is still at its source
 * coordinates (while the source topic keeps it); the DLQ tool does not replay a cut record.
 */
export function deadLetterRecord(
  original: {
    readonly key: Buffer | null;
    readonly value: Buffer | null;
    readonly headers: Readonly<Record<string, Buffer>>;
    readonly repeatedHeaders?: Readonly<Record<string, readonly Buffer[]>>;
  },
  facts: DeadLetterFacts,
): DeadLetterRecord {
  const headers = deadLetterHeaders(original.headers, facts, original.repeatedHeaders);
  const whole = { key: original.key, value: original.value, headers };
  if (recordBytes(whole) <= MAX_DLQ_RECORD_BYTES) return whole;
  const cut = { valueBytes: original.value?.length ?? 0, keyBytes: original.key?.length ?? 0, droppedHeaders: 0 };
  let key = original.key;
  if (recordBytes({ key, value: null, headers }) > MAX_DLQ_RECORD_BYTES / 2) {
    // Every header but the DLQ's own goes, `sluice-producer` and `sluice-contract` too (a direct
    // producer may put anything in them; the DLQ headers say what matters). A short replay marker
    // stays: without it a cut failed replay was listed as a first dead letter.
    const own = new Set<string>(Object.entries(HEADERS).filter(([k]) => k.startsWith('dlq')).map(([, name]) => name));
    for (const name of Object.keys(headers)) {
      if (own.has(name)) continue;
      const value = headers[name];
      if (name === HEADERS.replayOf && !Array.isArray(value) && Buffer.byteLength(value as string | Buffer) <= MAX_REPLAY_MARKER_BYTES) continue;
      cut.droppedHeaders += Array.isArray(value) ? value.length : 1;
      delete headers[name];
    }
    if (key !== null && key.length > MAX_CUT_KEY_BYTES) key = key.subarray(0, MAX_CUT_KEY_BYTES);
  }
  headers[HEADERS.dlqTruncated] = JSON.stringify(cut);
  const room = Math.max(0, MAX_DLQ_RECORD_BYTES - recordBytes({ key, value: null, headers }));
  const value = original.value === null ? null : original.value.subarray(0, room);
  return { key, value, headers };
}

/** Bytes a DLQ record takes: key, value and headers with their framing. */
export function recordBytes(r: DeadLetterRecord): number {
  let n = (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const [name, v] of Object.entries(r.headers)) {
    for (const one of Array.isArray(v) ? (v as readonly Buffer[]) : [v as string | Buffer]) {
      n += HEADER_FRAMING_BYTES + Buffer.byteLength(name) + (typeof one === 'string' ? Buffer.byteLength(one) : one.length);
    }
  }
  return n;
}
