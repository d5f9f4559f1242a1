import type { GroupDescription, PartitionOffsets } from '@sluice/kafka';
import { judgeProgress, ProgressWatch, stalledPartitions, type MemberActivity, type ProgressSample } from './progress-watch';

const sample = (at: number, parts: Record<string, [committed: number | null, lag: number]>, owned?: string[]): ProgressSample => ({
  at,
  partitions: new Map(Object.entries(parts).map(([k, [committed, lag]]) => [k, { committed, lag }])),
  owned: owned && new Set(owned),
});

const activity = (o: Partial<{ held: string[]; idle: boolean; received: string[] }>): MemberActivity => ({
  heldThroughout: new Set(o.held ?? []),
  idleThroughout: o.idle ?? false,
  received: new Set(o.received ?? []),
});

describe('stalledPartitions', () => {
  it('is a partition with records to read at the start whose committed offset did not move', () => {
    const prev = sample(0, { 'raw:0': [10, 5], 'raw:1': [10, 5], 'raw:2': [10, 0], 'raw:3': [null, 3] });
    const cur = sample(60_000, { 'raw:0': [10, 9], 'raw:1': [12, 3], 'raw:2': [10, 4], 'raw:3': [null, 3] });
    // raw:1 moved; raw:2 was caught up when the window began; raw:3 never committed and still behind.
    expect(stalledPartitions(prev, cur)).toEqual(['raw:0', 'raw:3']);
  });
});

describe('stalledPartitions with read positions', () => {
  const at = (when: number, committed: number, position: number | undefined, lag: number): ProgressSample => ({
    at: when,
    partitions: new Map([['raw:0', position === undefined ? { committed, lag } : { committed, position, lag }]]),
  });

  // A transactional producer's commit marker sits after the last record: the group's offset stops
  // before it while the consumer reads past it, caught up.
  it('is not a caught-up partition that ends in a transaction marker', () => {
    expect(stalledPartitions(at(0, 10, 11, 0), at(60_000, 10, 11, 0))).toEqual([]);
  });

  it('is a held partition whose position did not move while records waited', () => {
    expect(stalledPartitions(at(0, 10, 10, 5), at(60_000, 10, 10, 9))).toEqual(['raw:0']);
    expect(stalledPartitions(at(0, 10, 10, 5), at(60_000, 10, 14, 5))).toEqual([]);
  });
});

describe('judgeProgress', () => {
  // raw:0 stalls over the window, raw:1 moves.
  const before = (owned?: string[]) => sample(0, { 'raw:0': [10, 5], 'raw:1': [20, 5] }, owned);
  const after = (owned?: string[]) => sample(60_000, { 'raw:0': [10, 8], 'raw:1': [25, 0] }, owned);
  const [prev, cur] = [before(), after()];

  it('a partition held all window with nothing received is a wedged fetcher', () => {
    expect(judgeProgress(prev, cur, activity({ held: ['raw:0', 'raw:1'] }))).toEqual({ stuck: true, reason: 'not-fetching', partitions: ['raw:0'], windowMs: 60_000 });
  });

  it('records received (a batch whose transactions fail) or a partition taken over mid-window is not a wedge', () => {
    expect(judgeProgress(prev, cur, activity({ held: ['raw:0'], received: ['raw:0'] }))).toEqual({ stuck: false });
    expect(judgeProgress(prev, cur, activity({ held: ['raw:1'] }))).toEqual({ stuck: false });
  });

  it('an idle instance restarts only when no member held the stalled partition at either end of the window', () => {
    const idle = activity({ idle: true });
    expect(judgeProgress(before(['raw:0', 'raw:1']), after(['raw:0', 'raw:1']), idle)).toEqual({ stuck: false });
    expect(judgeProgress(before(['raw:1']), after(['raw:1']), idle)).toEqual({ stuck: true, reason: 'not-assigned', partitions: ['raw:0'], windowMs: 60_000 });
    // A rebalance in progress at one of the samples is not enough.
    expect(judgeProgress(before(['raw:0', 'raw:1']), after([]), idle)).toEqual({ stuck: false });
    expect(judgeProgress(before([]), after(['raw:0']), idle)).toEqual({ stuck: false });
    // Without the group's description, no verdict on an idle instance; nor on one that held something.
    expect(judgeProgress(before(), after([]), idle)).toEqual({ stuck: false });
    expect(judgeProgress(before([]), after([]), activity({}))).toEqual({ stuck: false });
  });
});

/** A broker stand-in: offsets and the group as the test sets them. */
class FakeSource {
  lag: PartitionOffsets[] = [];
  owners: string[] = [];
  fail = false;
  described = 0;
  async fetchLag(): Promise<PartitionOffsets[]> {
    if (this.fail) throw new Error('broker away');
    return this.lag;
  }
  async describeGroup(groupId: string): Promise<GroupDescription> {
    this.described++;
    return { groupId, state: 'stable', members: [{ memberId: 'm', clientId: 'c', assignment: this.owners.map((k) => ({ topic: 'raw', partition: Number(k.split(':')[1]) })) }] };
  }
  set(parts: Record<number, [committed: number | null, end: number]>): void {
    this.lag = Object.entries(parts).map(([p, [committed, end]]) => ({ topic: 'raw', partition: Number(p), committed, end, lag: end - (committed ?? 0) }));
  }
}

describe('ProgressWatch', () => {
  let now = 0;
  const setup = () => {
    const source = new FakeSource();
    const failures: unknown[] = [];
    const watch = new ProgressWatch({ source, groupId: 'g', topic: 'raw', now: () => now, onSampleFailed: (e) => failures.push(e) });
    return { source, watch, failures };
  };
  beforeEach(() => {
    now = 1_000;
  });

  it('judges nothing on the first sample, then a held partition that received nothing for a window; the verdict sticks', async () => {
    const { source, watch } = setup();
    watch.assigned([{ topic: 'raw', partition: 0 }]);
    source.set({ 0: [10, 15] });
    now = 2_000;
    expect(await watch.check()).toEqual({ stuck: false });
    source.set({ 0: [10, 30] });
    now = 62_000;
    expect(await watch.check()).toMatchObject({ stuck: true, reason: 'not-fetching', partitions: ['raw:0'], windowMs: 60_000 });
    expect(watch.live()).toBe(false);
    source.set({ 0: [30, 30] });
    now = 122_000;
    expect((await watch.check()).stuck).toBe(true);
  });

  it('a batch in hand across the sample counts as received in the next window too', async () => {
    const { source, watch } = setup();
    watch.assigned([{ topic: 'raw', partition: 0 }]);
    source.set({ 0: [10, 15] });
    now = 2_000;
    await watch.check();
    watch.batchStarted([{ topic: 'raw', partition: 0 }]);
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: false });
    now = 122_000;
    expect(await watch.check()).toEqual({ stuck: false });
    watch.batchEnded();
    now = 182_000;
    expect(await watch.check()).toEqual({ stuck: false }); // still in hand during part of this window
    now = 242_000;
    expect((await watch.check()).stuck).toBe(true);
  });

  it('a failed sample restarts the window, so a broker outage is never judged', async () => {
    const { source, watch, failures } = setup();
    watch.assigned([{ topic: 'raw', partition: 0 }]);
    source.set({ 0: [10, 15] });
    now = 2_000;
    await watch.check();
    source.fail = true;
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: false });
    expect(failures).toHaveLength(1);
    source.fail = false;
    now = 122_000;
    expect(await watch.check()).toEqual({ stuck: false }); // a new first sample
    now = 182_000;
    expect((await watch.check()).stuck).toBe(true);
  });

  it('an instance holding nothing asks the group at every sample who holds what', async () => {
    const { source, watch } = setup();
    source.set({ 0: [10, 15] });
    source.owners = ['raw:0'];
    now = 2_000;
    await watch.check();
    source.owners = [];
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: false }); // held at the start of the window
    now = 122_000;
    expect(await watch.check()).toMatchObject({ stuck: true, reason: 'not-assigned', partitions: ['raw:0'] });
    expect(source.described).toBe(3);
  });

  it('an instance that held a partition during the window is not idle, and one assigned mid-window is not judged for it', async () => {
    const { source, watch } = setup();
    source.set({ 0: [10, 15] });
    now = 2_000;
    await watch.check();
    now = 30_000;
    watch.assigned([{ topic: 'raw', partition: 0 }]);
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: false });
    expect(source.described).toBe(1); // only the first sample, taken while it held nothing
    now = 70_000;
    watch.revoked([{ topic: 'raw', partition: 0 }]);
    now = 122_000;
    expect(await watch.check()).toEqual({ stuck: false }); // not idle all window
  });
});
