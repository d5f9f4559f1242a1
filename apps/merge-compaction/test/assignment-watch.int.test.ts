import { CONTRACTS } from '@sluice/contracts';
import { BatchConsumer, KafkaAdmin } from '@sluice/kafka';
import type { MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { AssignmentWatch } from '../src/tier1/assignment-watch';
import { brokers, ORACLE_SPECS, produce, rand, startApp, streamOptions, TEST_PARTITIONS, TestEnv, waitFor } from './support/harness';

// Tier 1's group watch against a real broker: what it reads of a group nobody holds the topic
// in, of a group whose one member holds everything, and of two tier-1 workers sharing one
// partition (the idle extra replica must stay live).
const orders = CONTRACTS.orders;
const WINDOW_MS = 5_000;

describe('tier 1 group watch', () => {
  const env = new TestEnv('assignment', [orders]);
  const admin = new KafkaAdmin({ brokers: brokers(), clientId: 'assignment-watch-test' });
  const sends = generateStream([ORACLE_SPECS.orders], streamOptions(41, 200));
  const apps: MergeApp[] = [];
  const keys = Array.from({ length: TEST_PARTITIONS }, (_, p) => `${env.topic(orders)}:${p}`);

  beforeAll(async () => {
    await env.createTopics();
    await produce(env, sends);
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await admin.close();
    await env.close();
  });

  it('partitions with records that no member of a settled group holds are orphaned; held by a member they are not', async () => {
    // Nobody joined this group: what a member whose join never completed sees. Two samples,
    // the window between them is whatever time they take (the rule does not depend on it).
    const nobody = new AssignmentWatch({ source: admin, groupId: `mc-nobody-${rand()}`, topics: [env.topic(orders)] });
    expect(await nobody.check()).toEqual({ stuck: false });
    expect(await nobody.check()).toMatchObject({ stuck: true, reason: 'not-assigned', partitions: keys });

    const group = `mc-held-${rand()}`;
    const member = new BatchConsumer({ brokers: brokers(), clientId: 'assignment-member', groupId: group, topics: [env.topic(orders)], isolationLevel: 'read_committed' });
    await member.connect();
    try {
      await waitFor('the member to hold every partition', async () => {
        await member.poll();
        return member.assignment().length === TEST_PARTITIONS && (await admin.describeGroup(group)).state === 'stable';
      }, 60_000);
      const held = new AssignmentWatch({ source: admin, groupId: group, topics: [env.topic(orders)] });
      for (let i = 0; i < 3; i++) expect(await held.check()).toEqual({ stuck: false });
    } finally {
      await member.close();
    }
  }, 90_000);

  it('an idle extra tier-1 replica stays live through several windows while the other holds the partition', async () => {
    // One partition, two workers: one holds it, the other is a legitimately idle member.
    const single = new TestEnv('assignment-single', [orders]);
    await admin.createTopic({ name: single.topic(orders), partitions: 1 });
    try {
      await produce(single, sends);
      const start = () => startApp(single, apps, { SLUICE_ROLES: 'tier1', SLUICE_ASSIGNMENT_WINDOW_MS: String(WINDOW_MS) }, single.telemetry.logger.child({ worker: apps.length }));
      const [a, b] = [await start(), await start()];
      await waitFor('one worker holding the partition and one holding nothing, in a settled group', async () => {
        const g = await admin.describeGroup(single.group);
        return g.state === 'stable' && g.members.length === 2 && g.members.filter((m) => m.assignment.length === 0).length === 1;
      }, 60_000);
      await waitFor('a bronze commit', () => a.tier1!.stats.commits + b.tier1!.stats.commits > 0, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 3 * WINDOW_MS + 1_000));
      expect((await admin.describeGroup(single.group)).members.map((m) => m.assignment.length).sort()).toEqual([0, 1]);
      expect([a.tier1!.assignment(), b.tier1!.assignment()]).toEqual([{ stuck: false }, { stuck: false }]);
      expect(a.live() && b.live()).toBe(true);
    } finally {
      await Promise.all(apps.splice(0).map((app) => app.stop()));
      await admin.deleteTopics([single.topic(orders)]).catch(() => undefined);
      await single.close();
    }
  }, 120_000);
});
