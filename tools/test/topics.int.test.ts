import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { KafkaAdmin } from '@sluice/kafka';
import { pipelineTopicSpecs, planTopics, provisionTopics, type TopicPlan } from '../src/topics';
import { testBrokers, testSecureKafka } from './support/env';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

function prefix(): string {
  return `it-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}.`;
}

function testPlans(p: string): TopicPlan[] {
  return planTopics(
    [
      { name: 'raw', partitions: 4, retentionMs: 3_600_000, cleanupPolicy: 'delete', timestampType: 'LogAppendTime' },
      { name: 'state', partitions: 2, retentionMs: 7_200_000, cleanupPolicy: 'compact', timestampType: 'CreateTime' },
    ],
    { replicationFactor: 1, minInsyncReplicas: 1, namePrefix: p },
  );
}

describe('topic provisioning against the broker', () => {
  const admin = new KafkaAdmin({ brokers: testBrokers(), requestTimeoutMs: 30_000 });
  afterAll(() => admin.close());

  it('creates missing topics with their settings, and a re-run is a no-op', async () => {
    const plans = testPlans(prefix());
    const first = await provisionTopics(admin, plans);
    expect(first.ok).toBe(true);
    expect(first.topics.map((t) => t.action)).toEqual(['created', 'created']);
    expect(await admin.describeTopics(plans.map((p) => p.name))).toEqual([
      { name: plans[0].name, partitions: 4, replicationFactor: 1, leaderlessPartitions: [] },
      { name: plans[1].name, partitions: 2, replicationFactor: 1, leaderlessPartitions: [] },
    ]);
    const configs = await admin.describeTopicConfigs([plans[1].name]);
    expect(configs.get(plans[1].name)?.['cleanup.policy'].value).toBe('compact');
    expect(configs.get(plans[1].name)?.['retention.ms'].value).toBe('7200000');
    expect((await admin.describeTopicConfigs([plans[0].name])).get(plans[0].name)?.['message.timestamp.type'].value).toBe('LogAppendTime');

    const again = await provisionTopics(admin, plans);
    expect(again).toEqual({ ok: true, topics: plans.map((p) => ({ name: p.name, action: 'unchanged', problems: [], altered: [] })) });
  });

  it('reports config drift key by key, and --apply fixes it', async () => {
    const plans = testPlans(prefix());
    await provisionTopics(admin, plans);
    await admin.alterTopicConfigs(plans[0].name, { 'retention.ms': '60000', 'cleanup.policy': 'compact,delete' });

    const drift = await provisionTopics(admin, plans);
    expect(drift.ok).toBe(false);
    expect(drift.topics[0].action).toBe('failed');
    expect(drift.topics[0].problems).toEqual([
      expect.objectContaining({ code: 'TOPICS_CONFIG_DRIFT', key: 'cleanup.policy', expected: 'delete', actual: 'compact,delete' }),
      expect.objectContaining({ code: 'TOPICS_CONFIG_DRIFT', key: 'retention.ms', expected: '3600000', actual: '60000' }),
    ]);
    expect(drift.topics[1].action).toBe('unchanged');

    const checked = await provisionTopics(admin, plans, { check: true, apply: true });
    expect(checked.ok).toBe(false); // check wins over apply: nothing altered
    const fixed = await provisionTopics(admin, plans, { apply: true });
    expect(fixed.ok).toBe(true);
    expect(fixed.topics[0]).toMatchObject({ action: 'altered', altered: ['cleanup.policy', 'retention.ms'] });
    expect((await provisionTopics(admin, plans)).topics.map((t) => t.action)).toEqual(['unchanged', 'unchanged']);
  });

  it('treats "delete,compact" and "compact,delete" as the same cleanup policy', async () => {
    const p = prefix();
    const plans = planTopics([{ name: 'both', partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete', timestampType: 'CreateTime' }], { replicationFactor: 1, minInsyncReplicas: 1, namePrefix: p });
    const mixed = [{ ...plans[0], configs: { ...plans[0].configs, 'cleanup.policy': 'delete,compact' } }];
    await provisionTopics(admin, mixed);
    await admin.alterTopicConfigs(plans[0].name, { 'cleanup.policy': 'compact,delete' });
    expect((await provisionTopics(admin, mixed)).ok).toBe(true);
  });

  it('refuses a topic with fewer (or more) partitions than planned, even with --apply', async () => {
    const plans = testPlans(prefix());
    await admin.createTopic({ name: plans[0].name, partitions: 2, configs: plans[0].configs });
    await admin.createTopic({ name: plans[1].name, partitions: 3, configs: plans[1].configs });
    const report = await provisionTopics(admin, plans, { apply: true });
    expect(report.ok).toBe(false);
    expect(report.topics[0].problems).toEqual([expect.objectContaining({ code: 'TOPICS_PARTITIONS_TOO_FEW', expected: 4, actual: 2 })]);
    expect(report.topics[1].problems).toEqual([expect.objectContaining({ code: 'TOPICS_PARTITIONS_TOO_MANY', expected: 2, actual: 3 })]);
    expect((await admin.describeTopics([plans[0].name]))[0].partitions).toBe(2);
  });

  it('in check mode creates nothing and reports missing topics', async () => {
    const plans = testPlans(prefix());
    const report = await provisionTopics(admin, plans, { check: true });
    expect(report.ok).toBe(false);
    expect(report.topics.map((t) => [t.action, t.problems[0]?.code])).toEqual([
      ['missing', 'TOPICS_MISSING'],
      ['missing', 'TOPICS_MISSING'],
    ]);
    const existing = await admin.listTopics();
    for (const p of plans) expect(existing).not.toContain(p.name);
  });

  it('CLI: creates the pipeline topics, --check passes, then fails with the drifted key', async () => {
    const p = prefix();
    const cli = [path.join(ROOT, 'node_modules/.bin/tsx'), path.join(ROOT, 'tools/src/topics/cli.ts'), '--brokers', testBrokers(), '--prefix', p, '--timeout-ms', '30000'];
    const created = await run(cli[0], cli.slice(1), { cwd: ROOT });
    expect(created.stdout).toMatch(/^created\s+.*sluice\.raw/m);
    expect(created.stdout).toContain('ok: every topic matches the plan');
    await expect(run(cli[0], [...cli.slice(1), '--check'], { cwd: ROOT })).resolves.toMatchObject({ stdout: expect.stringMatching(/^unchanged\s+/m) });

    const raw = `${p}${pipelineTopicSpecs()[0].name}`;
    await admin.alterTopicConfigs(raw, { 'retention.ms': '1234' });
    const failed = await run(cli[0], [...cli.slice(1), '--check'], { cwd: ROOT }).catch((e) => e);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(`TOPICS_CONFIG_DRIFT: ${raw}: retention.ms is 1234, plan says`);

    const usage = await run(cli[0], [cli[1], '--check'], { cwd: ROOT }).catch((e) => e);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--brokers is required');
  });

  it('CLI on a secured cluster: provisions through SASL over TLS with the services\' KAFKA_* settings, and says why a wrong password fails', async () => {
    const p = prefix();
    const secure = testSecureKafka();
    const cli = [path.join(ROOT, 'node_modules/.bin/tsx'), path.join(ROOT, 'tools/src/topics/cli.ts'), '--brokers', secure.brokers, '--prefix', p, '--timeout-ms', '30000'];
    const env = { ...process.env, ...secure.env };
    const created = await run(cli[0], cli.slice(1), { cwd: ROOT, env });
    expect(created.stdout).toContain('ok: every topic matches the plan');
    await expect(run(cli[0], [...cli.slice(1), '--check'], { cwd: ROOT, env })).resolves.toMatchObject({ stdout: expect.stringMatching(/^unchanged\s+/m) });
    // Not a timeout: the refusal, within the request timeout.
    const refused = await run(cli[0], [...cli.slice(1), '--check', '--timeout-ms', '3000'], { cwd: ROOT, env: { ...env, KAFKA_SASL_PASSWORD: 'not-the-password' } }).catch((e) => e);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/invalid credentials/);
    const typo = await run(cli[0], [...cli.slice(1), '--check'], { cwd: ROOT, env: { ...env, KAFKA_SASL_USERNAME: undefined, KAFKA_SASL_USERNAM: 'sluice' } }).catch((e) => e);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('KAFKA_SASL_USERNAM is not a setting; did you mean KAFKA_SASL_USERNAME');
  });
});
