import type { GroupDescription, GroupState, TopicDescription } from '@sluice/kafka';

/**
 * Liveness of tier 1's group from the outside: is every partition of the valid topics held by
 * some member?
 *
 * The stall watch catches a Kafka call that never returns. It cannot see a member whose polls
 * all return, empty, because the group never gave it (or anyone) the partitions: a group join
 * wedged by a broker restart, as validate met once (RELIABILITY.md, "validate silent after a
 * broker restart"). In a settled group every partition of the subscribed topics has an owner.
 * So an instance that held nothing for a whole window reads, at both ends of it, which
 * partitions hold records and which members hold what; a partition with records that no member
 * of a settled group held at either end is orphaned, and this instance ends so that a fresh one
 * rejoins. A rebalance in progress is not judged: it may legitimately wait for a member lost
 * with the broker.
 *
 * Only an idle instance judges: one holding partitions is in a working group, and an idle extra
 * replica (more instances than partitions) sees every partition held and stays. Tier 1 keeps
 * its offsets in the tables, not in the group, so the rule asks who holds a partition, not
 * whether the group's committed offsets move (validate's rule; transaction markers in the
 * valid topics would also make "records to read" uncertain there).
 */

/** The broker reads the watch needs (KafkaAdmin has them). */
export interface AssignmentSource {
  describeTopics(names: readonly string[]): Promise<TopicDescription[]>;
  fetchEndOffsets(partitions: ReadonlyArray<{ topic: string; partition: number }>, readCommitted?: boolean): Promise<Map<string, number>>;
  describeGroup(groupId: string): Promise<GroupDescription>;
}

export type AssignmentVerdict =
  | { readonly stuck: false }
  | { readonly stuck: true; readonly reason: 'not-assigned'; readonly partitions: readonly string[]; readonly windowMs: number };

/** One look at the group: when, and the partitions with records that no member held. */
export interface AssignmentSample {
  readonly at: number;
  readonly orphaned: ReadonlySet<string>;
}

/** Partitions orphaned at both ends of a window this instance spent holding nothing. */
export function judgeAssignment(prev: AssignmentSample, cur: AssignmentSample, idleThroughout: boolean): AssignmentVerdict {
  if (!idleThroughout) return { stuck: false };
  const partitions = [...prev.orphaned].filter((key) => cur.orphaned.has(key)).sort();
  return partitions.length > 0 ? { stuck: true, reason: 'not-assigned', partitions, windowMs: cur.at - prev.at } : { stuck: false };
}

export interface AssignmentWatchOptions {
  readonly source: AssignmentSource;
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly now?: () => number;
  /** A sample that could not be taken (broker away): the window starts again at the next one. */
  readonly onSampleFailed?: (err: unknown) => void;
}

const keyOf = (p: { topic: string; partition: number }) => `${p.topic}:${p.partition}`;

/**
 * Group states in which the members' assignments are final: stable, or no member at all (empty,
 * dead), which is what a member whose join never completed leaves behind when it is alone.
 */
const SETTLED: ReadonlySet<GroupState> = new Set<GroupState>(['stable', 'empty', 'dead']);

/**
 * Follows this instance's assignment (fed by the rebalance hooks) and judges each window on
 * {@link check}. Once stuck, it stays stuck: the process is meant to end and a fresh instance to
 * rejoin.
 */
export class AssignmentWatch {
  private readonly now: () => number;
  private readonly held = new Set<string>();
  /** Counts assignments of partitions: unchanged between two samples means idle in between. */
  private assignments = 0;
  private previous: { readonly sample: AssignmentSample; readonly assignments: number } | undefined;
  private verdict: AssignmentVerdict = { stuck: false };

  constructor(private readonly options: AssignmentWatchOptions) {
    this.now = options.now ?? Date.now;
  }

  assigned(partitions: ReadonlyArray<{ topic: string; partition: number }>): void {
    if (partitions.length > 0) this.assignments += 1;
    for (const p of partitions) this.held.add(keyOf(p));
  }

  revoked(partitions: ReadonlyArray<{ topic: string; partition: number }>): void {
    for (const p of partitions) this.held.delete(keyOf(p));
  }

  /** Takes a sample (while holding nothing) and judges the window since the previous one. */
  async check(): Promise<AssignmentVerdict> {
    if (this.verdict.stuck) return this.verdict;
    const prev = this.previous;
    const assignments = this.assignments;
    this.previous = undefined; // only windows spent idle from end to end are judged
    if (this.held.size > 0) return this.verdict;
    let sample: AssignmentSample;
    try {
      sample = await this.sample();
    } catch (err) {
      this.options.onSampleFailed?.(err);
      return this.verdict;
    }
    // Partitions assigned while the sample was read: this window ends not idle.
    if (this.assignments !== assignments) return this.verdict;
    this.previous = { sample, assignments };
    if (prev !== undefined) this.verdict = judgeAssignment(prev.sample, sample, prev.assignments === assignments);
    return this.verdict;
  }

  /** False once a window judged this instance stuck. */
  live(): boolean {
    return !this.verdict.stuck;
  }

  /** The last verdict (for the exit report). */
  current(): AssignmentVerdict {
    return this.verdict;
  }

  private async sample(): Promise<AssignmentSample> {
    const at = this.now();
    const { source, groupId, topics } = this.options;
    const described = await source.describeTopics(topics);
    const partitions = described.flatMap((t) => Array.from({ length: t.partitions }, (_, partition) => ({ topic: t.name, partition })));
    const ends = await source.fetchEndOffsets(partitions, true);
    const group = await source.describeGroup(groupId);
    // A rebalance in progress (it may wait out a member lost with the broker) owns nothing yet.
    if (!SETTLED.has(group.state)) return { at, orphaned: new Set() };
    const owned = new Set(group.members.flatMap((m) => m.assignment.map(keyOf)));
    const orphaned = new Set(partitions.map(keyOf).filter((key) => (ends.get(key) ?? 0) > 0 && !owned.has(key)));
    return { at, orphaned };
  }
}
