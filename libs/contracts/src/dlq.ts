import { HEADERS } from './topics';

/** Most bytes of a DLQ record's detail header, so a record with many issues still fits a Kafka message. */
export const MAX_DLQ_DETAIL_BYTES = 8 * 1024;

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
 */
export function deadLetterHeaders(original: Readonly<Record<string, Buffer>>, facts: DeadLetterFacts): Record<string, string | Buffer> {
  const headers: Record<string, string | Buffer> = { ...original };
  headers[HEADERS.dlqReason] = facts.reason;
  headers[HEADERS.dlqDetail] = dlqDetail(facts.issues);
  headers[HEADERS.dlqSourceTopic] = facts.source.topic;
  headers[HEADERS.dlqSourcePartition] = String(facts.source.partition);
  headers[HEADERS.dlqSourceOffset] = String(facts.source.offset);
  headers[HEADERS.dlqProducer] = original[HEADERS.producer]?.toString('utf8') ?? 'unknown';
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
