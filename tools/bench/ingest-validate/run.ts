/**
 * ingest + validate throughput benchmark. Each service runs as its own child process; this
 * process is the load generator (autocannon) and samples the services' CPU and RSS from /proc.
 *
 *   SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092 npx tsx --tsconfig tsconfig.base.json tools/bench/ingest-validate/run.ts \
 *     [--seconds 15] [--batch 1000] [--connections 8] [--partitions 4] [--validate-batch 5000]
 *     [--traces-sample-ratio R]   (default: as deployed, deploy/k8s/base/config/common.env)
 *     [--validate-replicas N]     (validate processes in one consumer group; default 1)
 *     [--validate-compare VAR=A,B] [--validate-rounds N]
 *                                 (drains the same raw topic once per value of VAR per round, in a
 *                                 new group each time, A B then B A in alternate rounds; reports
 *                                 each drain and each value's median events/s as a ratio to A's)
 *
 * Phase 1: autocannon POSTs NDJSON batches to ingest for --seconds; events/s = 2xx × batch.
 * Phase 2: validate (transactions on) drains what phase 1 wrote; events/s from the committed
 * offsets of its group over time. With --validate-replicas N, N processes share the group (as
 * the StatefulSet scales out) and CPU is their sum. A same-run single-core baseline (JSON.parse of the same
 * events) says how fast this machine is at that moment, since it is shared.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { RAW_TOPIC } from '@sluice/contracts';
import { KafkaAdmin } from '@sluice/kafka';
import { bundleService, DEPLOYED_ENV, spawnService } from '../../src/bench/service-bundle';
import { watchProcess } from './proc-stats';

type Autocannon = (opts: Record<string, unknown>) => Promise<{
  requests: { average: number; total: number };
  latency: { p50: number; p90: number; p99: number; max: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}>;
// autocannon ships no types; the part used here is small.
const loadAutocannon = async (): Promise<Autocannon> => ((await import('autocannon')) as unknown as { default: Autocannon }).default;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    batch: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '8' },
    partitions: { type: 'string', default: '4' },
    'validate-batch': { type: 'string', default: '5000' },
    'traces-sample-ratio': { type: 'string', default: DEPLOYED_ENV.TRACES_SAMPLE_RATIO },
    'validate-replicas': { type: 'string', default: '1' },
    'validate-compare': { type: 'string' },
    'validate-rounds': { type: 'string', default: '1' },
  },
});
const SECONDS = Number(values.seconds);
const BATCH = Number(values.batch);
const CONNECTIONS = Number(values.connections);
const PARTITIONS = Number(values.partitions);
const VALIDATE_BATCH = Number(values['validate-batch']);
const TRACES_SAMPLE_RATIO = values['traces-sample-ratio'];
const VALIDATE_REPLICAS = Number(values['validate-replicas']);
const VALIDATE_ROUNDS = Number(values['validate-rounds']);
/** The variable --validate-compare varies and its values (A first); none: one drain as configured. */
const COMPARE = ((): { name: string; values: string[] } | undefined => {
  const spec = values['validate-compare'];
  if (spec === undefined) return undefined;
  const m = /^([A-Z0-9_]+)=(.+)$/.exec(spec);
  if (!m || m[2].split(',').length < 2) throw new Error('--validate-compare wants VAR=A,B[,…]');
  return { name: m[1], values: m[2].split(',') };
})();
const brokers = process.env.SLUICE_TEST_KAFKA_BROKERS ?? '';
if (!brokers) throw new Error('set SLUICE_TEST_KAFKA_BROKERS (e.g. 127.0.0.1:19092)');

const API_KEY = 'bench-key-0123456789abcdefghijklmnop';
const prefix = `bench-${randomBytes(4).toString('hex')}.`;
const topics = { raw: `${prefix}raw`, dlq: `${prefix}dlq`, valid: ['orders', 'inventory', 'clickstream'].map((c) => `${prefix}sluice.${c}.valid`) };

function event(i: number): Record<string, unknown> {
  const now = new Date().toISOString();
  const id = `evt-${randomUUID()}`;
  switch (i % 3) {
    case 0:
      return { contract: 'orders', event_id: id, event_time: now, producer: 'bench', schema_version: 2, version: i, op: 'upsert', order_id: `o-${i % 50_000}`, payload: { customer_id: `c-${i % 977}`, status: 'paid', total_cents: 100 + i, currency: 'EUR', item_count: 1 + (i % 5), coupon_code: null } };
    case 1:
      return { contract: 'inventory', event_id: id, event_time: now, producer: 'bench', schema_version: 1, version: i, op: 'upsert', sku: `sku-${i % 10_000}`, warehouse_id: `w-${i % 7}`, payload: { on_hand: 100, reserved: i % 100 } };
    default:
      return { contract: 'clickstream', event_id: id, event_time: now, producer: 'bench', schema_version: 1, version: 0, op: 'upsert', user_id: `u-${i % 20_000}`, payload: { session_id: `s-${i % 3000}`, event_type: 'page_view', page: `/p/${i % 100}`, referrer: null, duration_ms: i % 5000 } };
  }
}

function start(main: string, env: Record<string, string>): { proc: ChildProcess; lines: string[]; waitFor(re: RegExp): Promise<string> } {
  const proc = spawnService(main, env);
  const lines: string[] = [];
  const listeners: ((l: string) => void)[] = [];
  const on = (b: Buffer) => b.toString().split('\n').filter(Boolean).forEach((l) => (lines.push(l), listeners.forEach((f) => f(l))));
  proc.stdout?.on('data', on);
  proc.stderr?.on('data', on);
  return {
    proc,
    lines,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        const hit = lines.find((l) => re.test(l));
        if (hit) return resolve(hit);
        listeners.push((l) => re.test(l) && resolve(l));
        proc.once('exit', (code) => reject(new Error(`${main} exited ${code}:\n${lines.slice(-20).join('\n')}`)));
      }),
  };
}

function baselineJsonParse(body: string[]): number {
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < 2000) {
    for (const line of body) JSON.parse(line);
    n += body.length;
  }
  return n / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const admin = new KafkaAdmin({ brokers, clientId: 'bench' });
  await admin.createTopic({ name: topics.raw, partitions: PARTITIONS, configs: { 'message.timestamp.type': RAW_TOPIC.timestampType } });
  for (const name of topics.valid) await admin.createTopic({ name, partitions: PARTITIONS });
  await admin.createTopic({ name: topics.dlq, partitions: 2 });

  const lines = Array.from({ length: BATCH }, (_, i) => JSON.stringify(event(i)));
  const body = lines.join('\n');
  const baseline = baselineJsonParse(lines);

  // ---- Phase 1: ingest
  const ingest = start(await bundleService('ingest'), {
    KAFKA_BROKERS: brokers,
    INGEST_PORT: '0',
    OPS_PORT: '0',
    INGEST_RAW_TOPIC: topics.raw,
    INGEST_API_KEYS: JSON.stringify([{ producer: 'bench', key: API_KEY, contracts: ['*'] }]),
    INGEST_MAX_BATCH_EVENTS: String(Math.max(BATCH, 10_000)),
    TRACES_SAMPLE_RATIO,
    LOG_LEVEL: 'info',
  });
  const address = await findIngestAddress(ingest);
  const ingestStats = watchProcess(ingest.proc.pid!);
  const autocannon = await loadAutocannon();
  const result = await autocannon({
    url: `${address}/v1/events`,
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/x-ndjson' },
    body,
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  const ingestUsage = ingestStats.stop();
  const ok = result.requests.total - result.non2xx;
  const ingestEventsPerSecond = (ok * BATCH) / SECONDS;
  ingest.proc.kill('SIGTERM');
  await new Promise((r) => ingest.proc.once('exit', r));

  const rawEnds = await admin.fetchEndOffsets(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: topics.raw, partition })), false);
  const rawTotal = [...rawEnds.values()].reduce((a, b) => a + b, 0);

  // ---- Phase 2: validate drains the raw topic (once, or once per compared value per round)
  const validateMain = await bundleService('validate');
  let drains = 0;
  const drain = async (env: Record<string, string>) => {
    const group = `${prefix}validate-${drains++}`;
    const validates = Array.from({ length: VALIDATE_REPLICAS }, (_, i) =>
      start(validateMain, {
        KAFKA_BROKERS: brokers,
        VALIDATE_GROUP_ID: group,
        VALIDATE_INSTANCE_ID: `bench-${i}`,
        VALIDATE_RAW_TOPIC: topics.raw,
        VALIDATE_DLQ_TOPIC: topics.dlq,
        VALIDATE_VALID_TOPIC_PREFIX: prefix,
        OPS_PORT: '0',
        LOG_LEVEL: 'info',
        VALIDATE_MAX_BATCH_MESSAGES: String(VALIDATE_BATCH),
        TRACES_SAMPLE_RATIO,
        ...env,
      }),
    );
    await Promise.all(validates.map((v) => v.waitFor(/validate running/)));
    const validateStats = validates.map((v) => watchProcess(v.proc.pid!));
    let firstProgressAt = 0;
    let firstProgress = 0;
    let doneAt = 0;
    const deadline = Date.now() + 300_000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      const committed = await admin.fetchCommittedOffsets(group, Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: topics.raw, partition }))).catch(() => undefined);
      if (!committed) continue; // a transaction is moving offsets right now
      const done = [...committed.values()].reduce((a, b) => a + b, 0);
      if (done > 0 && firstProgressAt === 0) [firstProgressAt, firstProgress] = [performance.now(), done];
      if (done >= rawTotal) {
        doneAt = performance.now();
        break;
      }
    }
    const usage = validateStats.map((w) => w.stop());
    for (const v of validates) v.proc.kill('SIGTERM');
    await Promise.all(validates.map((v) => new Promise((r) => v.proc.once('exit', r))));
    if (doneAt === 0) throw new Error('validate did not finish within 300 s');
    const eventsPerSecond = (rawTotal - firstProgress) / ((doneAt - firstProgressAt) / 1000);
    const result = {
      ...(Object.keys(env).length > 0 ? { env } : {}),
      events: rawTotal,
      eventsPerSecond: Math.round(eventsPerSecond),
      ratioToBaseline: +(eventsPerSecond / baseline).toFixed(3),
      cpuPercent: Math.round(usage.reduce((sum, u) => sum + u.cpuPercent, 0)),
      peakRssMb: Math.round(Math.max(...usage.map((u) => u.peakRssMb))),
      ...(VALIDATE_REPLICAS > 1 ? { replicas: usage.map((u) => ({ cpuPercent: Math.round(u.cpuPercent), peakRssMb: Math.round(u.peakRssMb) })) } : {}),
    };
    console.error(`validate drain ${drains}: ${JSON.stringify(result)}`);
    return result;
  };
  let validate: Record<string, unknown>;
  if (COMPARE === undefined) {
    validate = await drain({});
  } else {
    const runs: Awaited<ReturnType<typeof drain>>[] = [];
    for (let round = 0; round < VALIDATE_ROUNDS; round++) {
      const order = round % 2 === 0 ? COMPARE.values : [...COMPARE.values].reverse();
      for (const value of order) runs.push(await drain({ [COMPARE.name]: value }));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
    const medians = COMPARE.values.map((value) => median(runs.filter((r) => r.env?.[COMPARE.name] === value).map((r) => r.eventsPerSecond)));
    validate = {
      compare: COMPARE.name,
      runs,
      medians: Object.fromEntries(COMPARE.values.map((value, i) => [value, { eventsPerSecond: medians[i], ratioToFirst: +(medians[i] / medians[0]).toFixed(3) }])),
    };
  }
  await admin.close();

  const report = {
    when: new Date().toISOString(),
    loadavg: (await import('node:os')).loadavg().map((l) => l.toFixed(1)),
    settings: { seconds: SECONDS, batch: BATCH, connections: CONNECTIONS, partitions: PARTITIONS, validateBatch: VALIDATE_BATCH, validateReplicas: VALIDATE_REPLICAS, tracesSampleRatio: TRACES_SAMPLE_RATIO, bodyBytes: Buffer.byteLength(body) },
    baseline: { jsonParsePerSecondOneCore: Math.round(baseline) },
    ingest: {
      requests: result.requests.total,
      non2xx: result.non2xx,
      errors: result.errors,
      eventsPerSecond: Math.round(ingestEventsPerSecond),
      ratioToBaseline: +(ingestEventsPerSecond / baseline).toFixed(3),
      latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
      cpuPercent: Math.round(ingestUsage.cpuPercent),
      peakRssMb: Math.round(ingestUsage.peakRssMb),
    },
    validate,
  };
  console.log(JSON.stringify(report, null, 2));
}

async function findIngestAddress(ingest: ReturnType<typeof start>): Promise<string> {
  return JSON.parse(await ingest.waitFor(/ingest listening/)).address;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
