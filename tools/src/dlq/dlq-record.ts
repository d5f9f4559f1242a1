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
 * other partition, read in parallel, so R1 waits until the scan has passed R0's offset there
 * ({@link released}; the rest at the end, {@link settle}). Holds a position and a digest per
 * record selected (about 150 bytes each), and the records waiting: as many as one partition's
 * scan runs ahead of the other's.
 */
export class ReplayOnce<E extends Pick<DlqEntry, 'partition' | 'offset' | 'replayOf'> & { message: Pick<DlqMessage, 'value'> }> {
  /** Position → digest of the value of every record selected so far. */
  private readonly selected = new Map<string, string>();
  /** The highest offset of a selected record per DLQ partition: the scan is past it there. */
  private readonly reached = new Map<number, number>();
  /** Waiting records by their original's partition, in the order of the original's offset. */
  private readonly waiting = new Map<number, { original: number; entry: E }[]>();
  private waitingCount = 0;
  /** Waiting records decided since {@link released} was last called. */
  private decided: { replay: E[]; skipped: number } = { replay: [], skipped: 0 };

  constructor(private readonly dlqTopic: string) {}

  /** Records waiting for the scan to pass their original. */
  get waitingRecords(): number {
    return this.waitingCount;
  }

  /**
   * `replay` now, `skip` (a record selected earlier in this run replays its event), or `wait`:
   * its original may come later in the scan ({@link released} tells once it is decided).
   */
  take(e: E): 'replay' | 'skip' | 'wait' {
    this.selected.set(`${this.dlqTopic}/${e.partition}/${e.offset}`, digestOf(e.message.value));
    const reached = Math.max(this.reached.get(e.partition) ?? -1, e.offset);
    this.reached.set(e.partition, reached);
    this.decideWaiting(e.partition, reached);
    if (e.replayOf === undefined) return 'replay';
    if (this.selected.has(e.replayOf)) return this.replaysSameEvent(e) ? 'skip' : 'replay';
    const original = parsePosition(e.replayOf, this.dlqTopic);
    if (original === undefined || original.partition === e.partition || (this.reached.get(original.partition) ?? -1) >= original.offset) return 'replay';
    const list = this.waiting.get(original.partition) ?? [];
    let at = list.length;
    while (at > 0 && list[at - 1].original > original.offset) at--;
    list.splice(at, 0, { original: original.offset, entry: e });
    this.waiting.set(original.partition, list);
    this.waitingCount++;
    return 'wait';
  }

  /** Waiting records decided since the last call: those to replay now, and how many were skipped. */
  released(): { replay: E[]; skipped: number } {
    const out = this.decided;
    this.decided = { replay: [], skipped: 0 };
    return out;
  }

  /** At the end of the scan: every record still waiting is replayed (its original was not selected). */
  settle(): E[] {
    for (const p of [...this.waiting.keys()]) this.decideWaiting(p, Infinity);
    return this.released().replay;
  }

  /** Decides the waiting records whose original lies at or below `reached` in `partition`. */
  private decideWaiting(partition: number, reached: number): void {
    const list = this.waiting.get(partition);
    while (list !== undefined && list.length > 0 && list[0].original <= reached) {
      const { entry } = list.shift() as { original: number; entry: E };
      this.waitingCount--;
      if (this.selected.has(entry.replayOf as string) && this.replaysSameEvent(entry)) this.decided.skipped++;
      else this.decided.replay.push(entry);
    }
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
