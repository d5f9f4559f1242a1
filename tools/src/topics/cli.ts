/**
 * Topic provisioning CLI.
 *
 *   npx tsx tools/src/topics/cli.ts --brokers 127.0.0.1:9092 [--check | --apply]
 *       [--replication-factor 1] [--min-insync-replicas 1] [--prefix <name-prefix>] [--timeout-ms 10000] [--json]
 *
 * Default: create missing topics, report drift (exit 1 if any). --check: change nothing, exit 1
 * on any difference (CI, readiness). --apply: also alter drifted configs to the plan.
 * A secured cluster: the KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_* and KAFKA_SSL_* variables the services read.
 * Exit codes: 0 matches, 1 differences left, 2 bad usage or Kafka unreachable.
 */
import { parseArgs } from 'node:util';
import { KafkaAdmin, kafkaSecurityFromEnv, type KafkaSecurity } from '@sluice/kafka';
import { LOCAL_CLUSTER, pipelineTopicSpecs, planTopics } from './plan';
import { formatReport, provisionTopics } from './provision';

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`--${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        brokers: { type: 'string' },
        check: { type: 'boolean', default: false },
        apply: { type: 'boolean', default: false },
        'replication-factor': { type: 'string' },
        'min-insync-replicas': { type: 'string' },
        prefix: { type: 'string' },
        'timeout-ms': { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write('usage: cli.ts --brokers host:port [--check | --apply] [--replication-factor n] [--min-insync-replicas n] [--prefix p] [--timeout-ms n] [--json]\n');
    return 0;
  }
  if (!values.brokers) {
    process.stderr.write('--brokers is required (e.g. --brokers 127.0.0.1:9092)\n');
    return 2;
  }
  if (values.check && values.apply) {
    process.stderr.write('--check and --apply exclude each other\n');
    return 2;
  }
  let plans;
  let timeoutMs: number;
  let security: KafkaSecurity | undefined;
  try {
    security = kafkaSecurityFromEnv(process.env);
    timeoutMs = positiveInt('timeout-ms', values['timeout-ms'], 10_000);
    plans = planTopics(pipelineTopicSpecs(), {
      replicationFactor: positiveInt('replication-factor', values['replication-factor'], LOCAL_CLUSTER.replicationFactor),
      minInsyncReplicas: positiveInt('min-insync-replicas', values['min-insync-replicas'], LOCAL_CLUSTER.minInsyncReplicas),
      namePrefix: values.prefix,
    });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const admin = new KafkaAdmin({ brokers: values.brokers, security, clientId: 'sluice-topics', requestTimeoutMs: timeoutMs });
  try {
    const report = await provisionTopics(admin, plans, { check: values.check, apply: values.apply });
    process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report).join('\n')}\n`);
    return report.ok ? 0 : 1;
  } catch (err) {
    process.stderr.write(`topics: ${(err as Error).message}\n`);
    return 2;
  } finally {
    await admin.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${String(err)}\n`);
    process.exitCode = 2;
  },
);
