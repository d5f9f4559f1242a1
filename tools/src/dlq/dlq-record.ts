import { createHash } from 'node:crypto';
import { HEADERS } from '@sluice/contracts';

/**
 * The DLQ record as validate writes it: the original raw record (key, value bytes, headers) plus
 * `sluice-dlq-*` headers, named by the contracts' HEADERS (validate writes the same constants);
 * dlq-record.test.ts pins the strings so records already on the topic stay readable.
 */
export const DLQ_HEADERS = {
  reason: HEADERS.dlqReason,
  detail: HEADERS.dlqDetail,
  contract: HEADERS.dlqContract,
  sourceTopic: HEADERS.dlqSourceTopic,
  sourcePartition: HEADERS.dlqSourcePartition,
  sourceOffset: HEADERS.dlqSourceOffset,
  producer: HEADERS.dlqProducer,
  time: HEADERS.dlqTime,
  truncated: HEADERS.dlqTruncated,
} as const;

/** Header a replayed record carries: where in the DLQ it came from. */
export const REPLAY_HEADER = HEADERS.replayOf;

/** A record read from the DLQ topic. */
export interface DlqMessage {
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
  /** Every value of each header name the record repeats (a raw record's repeated headers, kept by the DLQ). */
  repeatedHeaders?: Record<string, Buffer[]>;
}

/** A DLQ record with its metadata decoded. */
export interface DlqEntry {
  partition: number;
  offset: number;
  reason: string;
  contract: string;
  producer: string;
  time: string;
  source: { topic: string; partition: number; offset: number };
  /** event_id when the value is a JSON object that has one; undefined for Avro or broken bytes. */
  eventId?: string;
  detail: unknown;
  /** `topic/partition/offset` of the DLQ record this one is a failed replay of (`sluice-replay-of`). */
  replayOf?: string;
  /**
   * Set when the record was cut to fit a Kafka message (`sluice-dlq-truncated`: the original
   * sizes): its original is at `source`, while that topic keeps it, and it is never replayed.
   */
  truncated?: unknown;
  message: DlqMessage;
}

/**
 * Records that are themselves failed replays (they carry `sluice-replay-of`): `exclude` them,
 * keep `only` them, or `include` them with the rest (the default). A replay sends each event
 * once however it is selected ({@link ReplayOnce}).
 */
export type ReplaysFilter = 'include' | 'exclude' | 'only';

/** Which DLQ records a command applies to. Empty filter = all. */
export interface DlqFilter {
  reasons?: readonly string[];
  contracts?: readonly string[];
  /** `partition:offset` positions, as decimal numbers without leading zeros. */
  positions?: readonly string[];
  /** Only records dead-lettered at or after this time (epoch ms); a record without a time is left out. */
  sinceMs?: number;
  replays?: ReplaysFilter;
}

function header(m: DlqMessage, name: string): string | undefined {
  return m.headers[name]?.toString('utf8');
}

/** JSON `text` parsed, or the text itself when it is not JSON: the tool must show what is there. */
function parseOr(text: string | undefined): unknown {
  try {
    return JSON.parse(String(text));
  } catch {
    return text;
  }
}

/** Decodes the DLQ metadata of a record; missing headers read as "unknown". */
export function describe(m: DlqMessage): DlqEntry {
  const detail = parseOr(header(m, DLQ_HEADERS.detail));
  const truncated = header(m, DLQ_HEADERS.truncated);
  const replayOf = header(m, REPLAY_HEADER);
  return {
    partition: m.partition,
    offset: m.offset,
    reason: header(m, DLQ_HEADERS.reason) ?? 'unknown',
    contract: header(m, DLQ_HEADERS.contract) ?? 'unknown',
    producer: header(m, DLQ_HEADERS.producer) ?? 'unknown',
    time: header(m, DLQ_HEADERS.time) ?? 'unknown',
    source: {
      topic: header(m, DLQ_HEADERS.sourceTopic) ?? 'unknown',
      partition: Number(header(m, DLQ_HEADERS.sourcePartition) ?? -1),
      offset: Number(header(m, DLQ_HEADERS.sourceOffset) ?? -1),
    },
    eventId: eventIdOf(m.value),
    detail,
    ...(replayOf === undefined ? {} : { replayOf }),
    ...(truncated === undefined ? {} : { truncated: parseOr(truncated) }),
    message: m,
  };
}

function eventIdOf(value: Buffer | null): string | undefined {
  if (value === null || value[0] !== 0x7b) return undefined;
  try {
    const parsed = JSON.parse(value.toString('utf8')) as { event_id?: unknown };
    return typeof parsed.event_id === 'string' ? parsed.event_id : undefined;
  } catch {
    return undefined;
  }
}

/** True when `e` is selected by `f`. */
export function matches(e: DlqEntry, f: DlqFilter): boolean {
  if (f.reasons && f.reasons.length > 0 && !f.reasons.includes(e.reason)) return false;
  if (f.contracts && f.contracts.length > 0 && !f.contracts.includes(e.contract)) return false;
  if (f.positions && f.positions.length > 0 && !f.positions.includes(`${e.partition}:${e.offset}`)) return false;
  // By instant, not by text: "10:00:00Z" sorted after "10:00:00.500Z", and "+01:00" not at all.
  if (f.sinceMs !== undefined && !(Date.parse(e.time) >= f.sinceMs)) return false;
  if (f.replays === 'exclude' && e.replayOf !== undefined) return false;
  if (f.replays === 'only' && e.replayOf === undefined) return false;
  return true;
}

/** Counts of DLQ entries by reason and contract, added one at a time (a scan keeps no entries). */
export class Counts {
  private readonly counts = new Map<string, { reason: string; contract: string; count: number }>();
  total = 0;

  add(e: Pick<DlqEntry, 'reason' | 'contract'>): void {
    const k = `${e.reason}\u0000${e.contract}`;
    const c = this.counts.get(k) ?? { reason: e.reason, contract: e.contract, count: 0 };
    c.count++;
    this.counts.set(k, c);
    this.total++;
  }

  /** By reason, then by contract, sorted by count descending. */
  rows(): { reason: string; contract: string; count: number }[] {
    return [...this.counts.values()].sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason) || a.contract.localeCompare(b.contract));
  }
}

/**
 * The raw record a replay writes: the original key, value and headers with the DLQ metadata
 * removed and a `sluice-replay-of` marker added. The value bytes are untouched, so event_id is
 * the original one and downstream dedup makes a repeated replay harmless.
 */
export function toReplayRecord(e: DlqEntry, dlqTopic: string): { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | string | readonly Buffer[]> } {
  const dlqNames = new Set<string>(Object.values(DLQ_HEADERS));
  const headers: Record<string, Buffer | string | readonly Buffer[]> = Object.create(null);
  for (const [name, value] of Object.entries(e.message.headers)) if (!dlqNames.has(name)) headers[name] = e.message.repeatedHeaders?.[name] ?? value;
  headers[REPLAY_HEADER] = `${dlqTopic}/${e.partition}/${e.offset}`;
  return { key: e.message.key, value: e.message.value, headers };
}

/**
 * One replay per event per run. A failed replay R1 (`sluice-replay-of` R0) holds the same event
 * as R0: replaying both doubled the DLQ copies of an event still failing, at every run. R1 is
 * left out when this run replays R0 with the same bytes (a marker a producer set on a raw record
 * itself names some other record: that record is replayed); it is replayed when R0 is gone (the
 * DLQ's retention), not selected, or holds other bytes. R0 usually shares R1's DLQ partition (the
 * copies share a key), where the scan reads it first; an event without a key may land in the
 * other partition, read in parallel, so R1 waits ({@link settle}) until the scan has passed R0's
 * offset there. Holds a position and a digest per record selected (about 150 bytes each), and the
 * records waiting.
 */
export class ReplayOnce<E extends Pick<DlqEntry, 'partition' | 'offset' | 'replayOf'> & { message: Pick<DlqMessage, 'value'> }> {
  /** Position → digest of the value of every record selected so far. */
  private readonly selected = new Map<string, string>();
  /** The highest offset of a selected record per DLQ partition: the scan is past it there. */
  private readonly reached = new Map<number, number>();
  private readonly waiting: E[] = [];

  constructor(private readonly dlqTopic: string) {}

  /**
   * `replay` now, `skip` (a record selected earlier in this run replays its event), or `wait`:
   * its original may come later in the scan; {@link settle} decides at the end.
   */
  take(e: E): 'replay' | 'skip' | 'wait' {
    this.selected.set(`${this.dlqTopic}/${e.partition}/${e.offset}`, digestOf(e.message.value));
    this.reached.set(e.partition, Math.max(this.reached.get(e.partition) ?? -1, e.offset));
    if (e.replayOf === undefined) return 'replay';
    if (this.selected.has(e.replayOf)) return this.replaysSameEvent(e) ? 'skip' : 'replay';
    const original = parsePosition(e.replayOf, this.dlqTopic);
    if (original === undefined || original.partition === e.partition || (this.reached.get(original.partition) ?? -1) >= original.offset) return 'replay';
    this.waiting.push(e);
    return 'wait';
  }

  /** At the end of the scan: the waiting records to replay (their original was not selected after all). */
  settle(): E[] {
    const out = this.waiting.filter((e) => !(this.selected.has(e.replayOf as string) && this.replaysSameEvent(e)));
    this.waiting.length = 0;
    return out;
  }

  private replaysSameEvent(e: E): boolean {
    return this.selected.get(e.replayOf as string) === digestOf(e.message.value);
  }
}

function digestOf(value: Buffer | null): string {
  return value === null ? 'null' : createHash('sha256').update(value).digest('base64');
}

/** The partition and offset of a `topic/partition/offset` position in `dlqTopic`; undefined for another topic's. */
function parsePosition(position: string, dlqTopic: string): { partition: number; offset: number } | undefined {
  const m = /^(.*)\/(\d+)\/(\d+)$/.exec(position);
  return m && m[1] === dlqTopic ? { partition: Number(m[2]), offset: Number(m[3]) } : undefined;
}
