import type { GroupDescription, PartitionOffsets } from '@sluice/kafka';

/**
 * Liveness from the outside: does the group move through raw?
 *
 * The stall watch catches a Kafka call that never returns. It cannot see a consumer whose calls
 * all return, empty, while raw fills up: a fetcher or a group join wedged by a broker restart
 * (RELIABILITY.md, "validate silent after a broker restart"). This watch reads, once per window,
 * the group's committed offsets and raw's end offsets from the broker. A partition that had
 * unread records at the start of a window and whose committed offset did not move by its end is
 * stalled. Whether that is this instance's fault decides the verdict:
 *
 * - it held the partition all window and received none of its records: its fetcher is wedged;
 * - it held no partition all window, and no member of the group held the stalled one at either
 *   end of the window: the group has not assigned it (a join that never completed), where a
 *   rebalance in progress at one sample is not enough.
 *
 * A partition that delivered records but whose transactions keep failing is not stalled here:
 * those failures are retried and logged by the batch loop. A partition held by another member is
 * that member's to judge, so an idle extra replica never restarts because of a busy one.
 */

/** Raw's partitions as the broker saw them at one moment. */
export interface ProgressSample {
  readonly at: number;
  /**
   * By `topic:partition`: the group's committed offset (null: none), this instance's read position
   * where it holds the partition, and the offsets after that position (else after the committed
   * offset) up to the last stable offset.
   */
  readonly partitions: ReadonlyMap<string, { readonly committed: number | null; readonly position?: number; readonly lag: number }>;
  /** Partitions some member of the group held; read only while this instance holds none. */
  readonly owned?: ReadonlySet<string>;
}

/** What this instance did between two samples. */
export interface MemberActivity {
  /** Partitions it held from before the earlier sample until the later one. */
  readonly heldThroughout: ReadonlySet<string>;
  /** True when it held no partition at any moment between the samples. */
  readonly idleThroughout: boolean;
  /** Partitions it received records of between the samples. */
  readonly received: ReadonlySet<string>;
}

export type ProgressVerdict =
  | { readonly stuck: false }
  | { readonly stuck: true; readonly reason: 'not-fetching' | 'not-assigned'; readonly partitions: readonly string[]; readonly windowMs: number };

/**
 * Partitions with unread offsets at `prev` whose committed offset and read position are the same
 * at `cur`. The position matters where raw holds transaction markers (a producer writing to raw in
 * transactions, or an aborted one): the group commits the offset after its last record, never
 * past the marker behind it, so a partition that ends in a marker kept one offset "unread" for
 * good and validate restarted every other window. The consumer's position moves past markers.
 */
export function stalledPartitions(prev: ProgressSample, cur: ProgressSample): string[] {
  const out: string[] = [];
  for (const [key, before] of prev.partitions) {
    const after = cur.partitions.get(key);
    if (after !== undefined && before.lag > 0 && after.committed === before.committed && after.position === before.position) out.push(key);
  }
  return out.sort();
}

/**
 * The verdict for one window. An idle instance is judged only when both samples say which
 * partitions the group's members held (`owned`).
 */
export function judgeProgress(prev: ProgressSample, cur: ProgressSample, me: MemberActivity): ProgressVerdict {
  const stalled = stalledPartitions(prev, cur);
  const windowMs = cur.at - prev.at;
  const mine = stalled.filter((key) => me.heldThroughout.has(key) && !me.received.has(key));
  if (mine.length > 0) return { stuck: true, reason: 'not-fetching', partitions: mine, windowMs };
  const [before, after] = [prev.owned, cur.owned];
  if (me.idleThroughout && before !== undefined && after !== undefined) {
    const orphaned = stalled.filter((key) => !before.has(key) && !after.has(key));
    if (orphaned.length > 0) return { stuck: true, reason: 'not-assigned', partitions: orphaned, windowMs };
  }
  return { stuck: false };
}

/** The broker reads the watch needs (KafkaAdmin has them). */
export interface ProgressSource {
  fetchLag(groupId: string, topics: readonly string[]): Promise<PartitionOffsets[]>;
  describeGroup(groupId: string): Promise<GroupDescription>;
}

export interface ProgressWatchOptions {
  readonly source: ProgressSource;
  readonly groupId: string;
  readonly topic: string;
  /** This instance's read position (next offset) in each partition it holds, where known. */
  readonly positions?: () => ReadonlyArray<{ topic: string; partition: number; nextOffset: number }>;
  readonly now?: () => number;
  /** A sample that could not be taken (broker away): the window starts again at the next one. */
  readonly onSampleFailed?: (err: unknown) => void;
}

const keyOf = (p: { topic: string; partition: number }) => `${p.topic}:${p.partition}`;

/**
 * Keeps this instance's side of {@link MemberActivity} (fed by the rebalance hooks and the
 * batches) and judges each window on {@link check}. Once stuck, it stays stuck: the process is
 * meant to end and a fresh instance to rejoin.
 */
export class ProgressWatch {
  private readonly now: () => number;
  private readonly heldSince = new Map<string, number>();
  /** When the last revocation left this instance holding nothing (undefined while it holds some). */
  private idleSince: number | undefined = Number.NEGATIVE_INFINITY;
  private received = new Set<string>();
  private inHand = new Set<string>();
  private previous: ProgressSample | undefined;
  private verdict: ProgressVerdict = { stuck: false };

  constructor(private readonly options: ProgressWatchOptions) {
    this.now = options.now ?? Date.now;
  }

  assigned(partitions: ReadonlyArray<{ topic: string; partition: number }>): void {
    const at = this.now();
    for (const p of partitions) if (!this.heldSince.has(keyOf(p))) this.heldSince.set(keyOf(p), at);
    if (this.heldSince.size > 0) this.idleSince = undefined;
  }

  revoked(partitions: ReadonlyArray<{ topic: string; partition: number }>): void {
    for (const p of partitions) this.heldSince.delete(keyOf(p));
    if (this.heldSince.size === 0) this.idleSince = this.now();
  }

  /**
   * A batch was polled (whether or not its transaction commits): its partitions count as
   * received in every window the batch is in hand, so a long batch is never taken for a wedge.
   */
  batchStarted(messages: ReadonlyArray<{ topic: string; partition: number }>): void {
    // A batch holds runs of one partition: a key per run, not per message (5,000 strings a batch).
    const inHand = new Set<string>();
    let last: { topic: string; partition: number } | undefined;
    for (const m of messages) {
      if (last !== undefined && m.partition === last.partition && m.topic === last.topic) continue;
      last = m;
      inHand.add(keyOf(m));
    }
    this.inHand = inHand;
    for (const key of inHand) this.received.add(key);
  }

  /** The batch in hand committed or aborted. */
  batchEnded(): void {
    this.inHand = new Set();
  }

  /** Takes a sample and judges the window since the previous one. */
  async check(): Promise<ProgressVerdict> {
    if (this.verdict.stuck) return this.verdict;
    const prev = this.previous;
    const at = this.now();
    const activity = this.activitySince(prev?.at ?? at);
    this.received = new Set(this.inHand);
    let sample: ProgressSample;
    try {
      sample = await this.sample(at);
    } catch (err) {
      this.previous = undefined;
      this.options.onSampleFailed?.(err);
      return this.verdict;
    }
    this.previous = sample;
    if (prev === undefined) return this.verdict;
    this.verdict = judgeProgress(prev, sample, activity);
    return this.verdict;
  }

  /** False once a window judged this instance stuck. */
  live(): boolean {
    return !this.verdict.stuck;
  }

  /** The last verdict (for the exit report). */
  current(): ProgressVerdict {
    return this.verdict;
  }

  private async sample(at: number): Promise<ProgressSample> {
    const lag = await this.options.source.fetchLag(this.options.groupId, [this.options.topic]);
    const positions = new Map((this.options.positions?.() ?? []).map((p) => [keyOf(p), p.nextOffset]));
    const partitions = new Map(
      lag.map((p) => {
        const position = positions.get(keyOf(p));
        return [keyOf(p), position === undefined ? { committed: p.committed, lag: p.lag } : { committed: p.committed, position, lag: Math.max(0, p.end - position) }];
      }),
    );
    if (this.heldSince.size > 0) return { at, partitions };
    // Holding nothing: who does? (A failed read leaves it unknown, and an idle verdict with it.)
    const group = await this.options.source.describeGroup(this.options.groupId).catch((err: unknown) => {
      this.options.onSampleFailed?.(err);
      return undefined;
    });
    return { at, partitions, owned: group && new Set(group.members.flatMap((m) => m.assignment.map(keyOf))) };
  }

  /** This instance's activity from `from` until now; `received` is handed over, not copied. */
  private activitySince(from: number): MemberActivity {
    const heldThroughout = new Set([...this.heldSince].filter(([, since]) => since <= from).map(([key]) => key));
    return { heldThroughout, idleThroughout: this.idleSince !== undefined && this.idleSince <= from, received: this.received };
  }
}
