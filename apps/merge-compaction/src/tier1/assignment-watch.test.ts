import type { GroupDescription, GroupState, TopicDescription } from '@sluice/kafka';
import { AssignmentWatch, judgeAssignment, type AssignmentSample } from './assignment-watch';

const sample = (at: number, orphaned: string[]): AssignmentSample => ({ at, orphaned: new Set(orphaned) });

describe('judgeAssignment', () => {
  it('names the partitions orphaned at both ends of a window spent idle', () => {
    expect(judgeAssignment(sample(0, ['v:0', 'v:1']), sample(60_000, ['v:1', 'v:2']), true)).toEqual({ stuck: true, reason: 'not-assigned', partitions: ['v:1'], windowMs: 60_000 });
  });

  it('is not stuck when the orphans differ, when none are left, or when the instance held partitions', () => {
    expect(judgeAssignment(sample(0, ['v:0']), sample(60_000, ['v:1']), true)).toEqual({ stuck: false });
    expect(judgeAssignment(sample(0, ['v:0']), sample(60_000, []), true)).toEqual({ stuck: false });
    expect(judgeAssignment(sample(0, ['v:0']), sample(60_000, ['v:0']), false)).toEqual({ stuck: false });
  });
});

/** A broker stand-in: topics, end offsets and the group as the test sets them. */
class FakeSource {
  partitions = 2;
  ends: Record<number, number> = { 0: 10, 1: 10 };
  state: GroupState = 'stable';
  owners: number[] = [];
  fail = false;
  async describeTopics(names: readonly string[]): Promise<TopicDescription[]> {
    if (this.fail) throw new Error('broker away');
    return names.map((name) => ({ name, partitions: this.partitions, replicationFactor: 1, leaderlessPartitions: [] }));
  }
  async fetchEndOffsets(partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Map<string, number>> {
    return new Map(partitions.map((p) => [`${p.topic}:${p.partition}`, this.ends[p.partition] ?? 0]));
  }
  async describeGroup(groupId: string): Promise<GroupDescription> {
    const assignment = this.owners.map((partition) => ({ topic: 'v', partition }));
    return { groupId, state: this.state, members: this.owners.length === 0 ? [] : [{ memberId: 'm', clientId: 'c', assignment }] };
  }
}

describe('AssignmentWatch', () => {
  let now = 0;
  const setup = () => {
    const source = new FakeSource();
    const failures: unknown[] = [];
    const watch = new AssignmentWatch({ source, groupId: 'g', topics: ['v'], now: () => now, onSampleFailed: (e) => failures.push(e) });
    return { source, watch, failures };
  };
  beforeEach(() => {
    now = 1_000;
  });

  it('judges nothing on the first sample, then partitions with records no member held for a window; the verdict sticks', async () => {
    const { source, watch } = setup();
    source.ends = { 0: 10, 1: 0 }; // partition 1 is empty: nothing waits there
    now = 2_000;
    expect(await watch.check()).toEqual({ stuck: false });
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: true, reason: 'not-assigned', partitions: ['v:0'], windowMs: 60_000 });
    expect(watch.live()).toBe(false);
    source.owners = [0, 1];
    now = 122_000;
    expect((await watch.check()).stuck).toBe(true);
  });

  it('an idle extra replica stays live while other members hold every partition', async () => {
    const { source, watch } = setup();
    source.owners = [0, 1];
    for (const at of [2_000, 62_000, 122_000]) {
      now = at;
      expect(await watch.check()).toEqual({ stuck: false });
    }
  });

  it('a rebalance in progress at both ends is not judged, however long it takes', async () => {
    const { source, watch } = setup();
    source.state = 'preparing-rebalance';
    for (const at of [2_000, 62_000, 122_000]) {
      now = at;
      expect(await watch.check()).toEqual({ stuck: false });
    }
    source.state = 'empty'; // settled with nobody in it: the join never completed
    now = 182_000;
    expect(await watch.check()).toEqual({ stuck: false }); // one end of the window only
    now = 242_000;
    expect(await watch.check()).toMatchObject({ stuck: true, partitions: ['v:0', 'v:1'] });
  });

  it('an instance holding partitions takes no sample, and one assigned during a window is not judged for it', async () => {
    const { source, watch } = setup();
    const described = jest.spyOn(source, 'describeGroup');
    watch.assigned([{ topic: 'v', partition: 0 }]);
    now = 2_000;
    expect(await watch.check()).toEqual({ stuck: false });
    expect(described).not.toHaveBeenCalled();
    watch.revoked([{ topic: 'v', partition: 0 }]);
    now = 62_000;
    expect(await watch.check()).toEqual({ stuck: false }); // first idle sample
    watch.assigned([{ topic: 'v', partition: 1 }]);
    watch.revoked([{ topic: 'v', partition: 1 }]);
    now = 122_000;
    expect(await watch.check()).toEqual({ stuck: false }); // held a partition during the window
    now = 182_000;
    expect((await watch.check()).stuck).toBe(true);
  });

  it('a failed sample restarts the window, so a broker outage is never judged', async () => {
    const { source, watch, failures } = setup();
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
});
