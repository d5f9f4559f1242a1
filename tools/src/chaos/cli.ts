/**
 * Fault-injection runs against the whole local pipeline, each ending with an oracle audit.
 *
 *   npx tsx tools/src/chaos/cli.ts --scenario kill [--seconds 60] [--rate 500] [--seed 1]
 *       [--brokers 127.0.0.1:19092] [--broker-port 19392] [--work-dir .sluice/chaos/<scenario>]
 *       [--drain-timeout 180] [--keep] [--json out.json]
 *   --scenario all runs every scenario in turn (a fresh stack each); --scenario a+b injects a then b
 *   during one load on one stack and audits once.
 *
 * Scenarios: kill, kill-each, broker, storage-fail, storage-slow, disk-full, s3-slow, s3-fail,
 * s3-lost-answers, replay, poison, scale (RELIABILITY.md); replay before poison in an a+b list. The s3-* scenarios put the lake on the S3
 * server named by SLUICE_TEST_S3_* (`bash tools/services.d/10-s3.sh start`, then export what its
 * `env` prints); `all` leaves them out, saying so, when those are not set.
 * Exit code 0 when every audited run passed, 1 otherwise, 2 on bad usage.
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../bench/stack';
import { abortAllRuns, runChaos, s3FromEnv, type ChaosResult } from './run';
import { SCENARIOS } from './scenarios';

async function main(): Promise<number> {
  const interrupt = () => {
    process.stderr.write('interrupted: stopping the stack, broker and mounts\n');
    void abortAllRuns().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      seconds: { type: 'string', default: '60' },
      rate: { type: 'string', default: '500' },
      seed: { type: 'string', default: '1' },
      brokers: { type: 'string', default: process.env.SLUICE_TEST_KAFKA_BROKERS ?? '127.0.0.1:19092' },
      // Below the ports tests take with freePort (20000 up), so a test beside a run never takes it while the broker is down.
      'broker-port': { type: 'string', default: '19392' },
      'work-dir': { type: 'string' },
      'drain-timeout': { type: 'string', default: '180' },
      keep: { type: 'boolean', default: false },
      json: { type: 'string' },
    },
    strict: true,
  });
  const s3 = s3FromEnv();
  let names = values.scenario === 'all' ? Object.keys(SCENARIOS) : values.scenario ? [values.scenario] : [];
  if (values.scenario === 'all' && !s3) {
    process.stderr.write('SLUICE_TEST_S3_* not set: the s3-* scenarios are left out of "all"\n');
    names = names.filter((n) => !SCENARIOS[n].s3);
  }
  if (names.length === 0 || names.some((n) => n.split('+').some((part) => !SCENARIOS[part]))) {
    process.stderr.write(`--scenario must be one of ${Object.keys(SCENARIOS).join(', ')} or all\n`);
    return 2;
  }
  const results: ChaosResult[] = [];
  for (const name of names) {
    const started = Date.now();
    const result = await runChaos({
      scenarios: name.split('+'),
      seconds: Number(values.seconds),
      rate: Number(values.rate),
      seed: Number(values.seed),
      brokers: values.brokers,
      brokerPort: Number(values['broker-port']),
      workDir: values['work-dir'] ? path.resolve(values['work-dir'], name.replace(/\+/g, '-')) : path.join(ROOT, '.sluice/chaos', name.replace(/\+/g, '-')),
      keep: values.keep,
      drainTimeoutMs: Number(values['drain-timeout']) * 1000,
      s3,
      log: (l) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${l}\n`),
    });
    results.push(result);
    const a = result.audit;
    process.stdout.write(
      `${result.passed ? 'PASS' : 'FAIL'} ${name}: ${result.eventsSent} events, ${result.faults.length} faults, restarts ${JSON.stringify(result.restarts)}, ` +
        `bronze ${JSON.stringify(a.bronzeRows)}, silver ${JSON.stringify(a.silverRows)}, DLQ ${a.dlqRecords}, drained in ${a.drainSeconds.toFixed(1)} s, ${Math.round((Date.now() - started) / 1000)} s total\n`,
    );
    for (const p of [...result.problems, ...a.problems]) process.stdout.write(`  - ${p}\n`);
  }
  if (values.json) {
    const plain = results.map(({ oracle, target: _target, ...r }) => ({ ...r, oracleCounts: { sent: oracle.sent, dlq: oracle.dlq.size, rejected: oracle.rejected.size } }));
    writeFileSync(values.json, JSON.stringify({ command: `npx tsx tools/src/chaos/cli.ts ${process.argv.slice(2).join(' ')}`, results: plain }, null, 2));
  }
  return results.every((r) => r.passed) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
