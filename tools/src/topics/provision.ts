/**
 * Idempotent topic provisioning: create what is missing, report every difference between the
 * plan and the cluster, and (only when asked) fix config drift. Partition counts and
 * replication factors are never changed automatically: adding partitions moves keys to other
 * partitions (breaking per-key order and the partition → silver bucket mapping).
 */
import type { KafkaAdmin } from '@sluice/kafka';
import type { TopicPlan } from './plan';

/** One difference between plan and cluster. */
export type TopicProblem =
  | { code: 'TOPICS_MISSING'; message: string }
  | { code: 'TOPICS_PARTITIONS_TOO_FEW' | 'TOPICS_PARTITIONS_TOO_MANY'; expected: number; actual: number; message: string }
  | { code: 'TOPICS_REPLICATION_MISMATCH'; expected: number; actual: number; message: string }
  | { code: 'TOPICS_CONFIG_DRIFT'; key: string; expected: string; actual: string | null; message: string };

/** What provisioning did or found for one topic. */
export interface TopicReport {
  name: string;
  /**
   * created: did not exist, now does; unchanged: matched the plan; altered: configs fixed;
   * missing: does not exist (check mode); failed: differences left.
   */
  action: 'created' | 'unchanged' | 'altered' | 'missing' | 'failed';
  /** Differences still present after this run (empty unless action is `failed`). */
  problems: TopicProblem[];
  /** Config keys changed by `apply`. */
  altered: string[];
}

/** The outcome of a run. */
export interface ProvisionReport {
  ok: boolean;
  topics: TopicReport[];
}

/** How to provision. */
export interface ProvisionOptions {
  /** Only look: create nothing, alter nothing; a missing topic is a problem. */
  check?: boolean;
  /** Alter drifted configs to the planned values (ignored with `check`). */
  apply?: boolean;
}

/** Brings the cluster to the plan (see module comment); never throws for drift, reports it. */
export async function provisionTopics(admin: KafkaAdmin, plans: readonly TopicPlan[], options: ProvisionOptions = {}): Promise<ProvisionReport> {
  const existing = new Set(await admin.listTopics());
  const topics: TopicReport[] = [];
  for (const plan of plans) {
    if (!existing.has(plan.name)) {
      if (options.check) {
        topics.push({ name: plan.name, action: 'missing', altered: [], problems: [{ code: 'TOPICS_MISSING', message: `${plan.name}: topic does not exist` }] });
        continue;
      }
      await admin.createTopic({ name: plan.name, partitions: plan.partitions, replicationFactor: plan.replicationFactor, configs: plan.configs });
      // Verify rather than trust: a broker policy may have rewritten the settings.
      const problems = await inspect(admin, plan);
      topics.push({ name: plan.name, action: problems.length === 0 ? 'created' : 'failed', altered: [], problems });
      continue;
    }
    let problems = await inspect(admin, plan);
    const drifted = problems.filter((p): p is Extract<TopicProblem, { code: 'TOPICS_CONFIG_DRIFT' }> => p.code === 'TOPICS_CONFIG_DRIFT');
    if (options.apply && !options.check && drifted.length > 0) {
      await admin.alterTopicConfigs(plan.name, Object.fromEntries(drifted.map((d) => [d.key, d.expected])));
      problems = await inspect(admin, plan);
      topics.push({ name: plan.name, action: problems.length === 0 ? 'altered' : 'failed', altered: drifted.map((d) => d.key), problems });
      continue;
    }
    topics.push({ name: plan.name, action: problems.length === 0 ? 'unchanged' : 'failed', altered: [], problems });
  }
  return { ok: topics.every((t) => t.problems.length === 0), topics };
}

/** Every difference between the plan and the topic on the cluster. */
export async function inspect(admin: KafkaAdmin, plan: TopicPlan): Promise<TopicProblem[]> {
  const [description] = await admin.describeTopics([plan.name]);
  const configs = (await admin.describeTopicConfigs([plan.name])).get(plan.name) ?? {};
  const problems: TopicProblem[] = [];
  if (description.partitions < plan.partitions) {
    problems.push({
      code: 'TOPICS_PARTITIONS_TOO_FEW',
      expected: plan.partitions,
      actual: description.partitions,
      message: `${plan.name}: has ${description.partitions} partitions, plan says ${plan.partitions}; adding partitions remaps keys, do it deliberately (kafka-topics --alter) and re-bucket`,
    });
  } else if (description.partitions > plan.partitions) {
    problems.push({
      code: 'TOPICS_PARTITIONS_TOO_MANY',
      expected: plan.partitions,
      actual: description.partitions,
      message: `${plan.name}: has ${description.partitions} partitions, plan says ${plan.partitions}; Kafka cannot remove partitions: update the plan or recreate the topic`,
    });
  }
  if (description.replicationFactor !== plan.replicationFactor) {
    problems.push({
      code: 'TOPICS_REPLICATION_MISMATCH',
      expected: plan.replicationFactor,
      actual: description.replicationFactor,
      message: `${plan.name}: replication factor ${description.replicationFactor}, plan says ${plan.replicationFactor}`,
    });
  }
  for (const [key, expected] of Object.entries(plan.configs)) {
    const actual = configs[key]?.value ?? null;
    if (!sameConfigValue(key, expected, actual)) {
      problems.push({ code: 'TOPICS_CONFIG_DRIFT', key, expected, actual, message: `${plan.name}: ${key} is ${actual ?? '(unset)'}, plan says ${expected}` });
    }
  }
  return problems;
}

function sameConfigValue(key: string, expected: string, actual: string | null): boolean {
  if (actual === null) return false;
  // cleanup.policy is a list: "compact,delete" and "delete,compact" are the same policy.
  if (key === 'cleanup.policy') return normaliseList(expected) === normaliseList(actual);
  return expected.trim() === actual.trim();
}

function normaliseList(value: string): string {
  return value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.length > 0)
    .sort()
    .join(',');
}

/** Human-readable lines of a report, one per topic and one per problem. */
export function formatReport(report: ProvisionReport): string[] {
  const lines: string[] = [];
  for (const t of report.topics) {
    const extra = t.altered.length > 0 ? ` (${t.altered.join(', ')})` : '';
    lines.push(`${t.action.padEnd(9)} ${t.name}${extra}`);
    for (const p of t.problems) lines.push(`  ${p.code}: ${p.message}`);
  }
  lines.push(report.ok ? 'ok: every topic matches the plan' : 'FAILED: the cluster differs from the plan (see above)');
  return lines;
}
