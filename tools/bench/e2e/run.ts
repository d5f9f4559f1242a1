/**
 * End-to-end benchmark of the whole local stack (ingest → validate → merge-compaction →
 * query-api) against the same machine's bare Kafka pass-through, measured in the same run.
 *
 *   npx tsx tools/bench/e2e/run.ts [--seconds 60] [--rate 0] [--batch 1000] [--concurrency 8]
 *       [--ceiling-events 300000] [--backlog 0] [--seed 1] [--broker-port 29192 | --brokers host:port]
 *       [--out .sluice/bench/e2e] [--drain-timeout 300] [--service-env merge-compaction:KEY=VALUE ...]
 *
 * --service-env sets one environment variable of one service (repeatable), e.g. the memory
 * settings deploy/ gives it: `merge-compaction:NODE_OPTIONS=--max-old-space-size=512`.
 * --rate 0 offers as much as ingest acknowledges. Writes <out>/result.json, chart.svg, chart.png
 * (throughput, lag and freshness over time) and prints progress every 5 s. See docs/bench/e2e.md.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { renderSvg, svgToPng } from '../../src/bench/chart';
import { loadStream, runBacklog, runE2e } from '../../src/bench/e2e';
import { DEPLOYED_ENV } from '../../src/bench/service-bundle';
import { OwnBroker, ROOT, Stack, type ServiceName } from '../../src/bench/stack';

const SERVICES: readonly string[] = ['ingest', 'validate', 'merge-compaction', 'query-api'] satisfies ServiceName[];

/** `base` plus each `service:KEY=VALUE` setting. */
function serviceEnv(settings: readonly string[], base: Record<string, Record<string, string>>): Record<string, Record<string, string>> {
  const env = structuredClone(base);
  for (const setting of settings) {
    const m = /^([a-z-]+):([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(setting);
    if (!m || !SERVICES.includes(m[1])) throw new Error(`--service-env ${JSON.stringify(setting)}: expected service:KEY=VALUE, service one of ${SERVICES.join(', ')}`);
    (env[m[1]] ??= {})[m[2]] = m[3];
  }
  return env;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '60' },
      rate: { type: 'string', default: '0' },
      batch: { type: 'string', default: '1000' },
      concurrency: { type: 'string', default: '8' },
      'ceiling-events': { type: 'string', default: '300000' },
      backlog: { type: 'string', default: '0' },
      seed: { type: 'string', default: '1' },
      'broker-port': { type: 'string', default: '29192' },
      brokers: { type: 'string' },
      out: { type: 'string', default: path.join(ROOT, '.sluice/bench/e2e') },
      'drain-timeout': { type: 'string', default: '300' },
      'service-env': { type: 'string', multiple: true, default: [] },
    },
    strict: true,
  });
  const command = `npx tsx tools/bench/e2e/run.ts ${process.argv.slice(2).join(' ')}`.trim();
  const progress = (l: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${l}\n`);
  const out = path.resolve(values.out);
  const work = path.join(out, 'work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  let broker: OwnBroker | undefined;
  let brokers = values.brokers;
  if (!brokers) {
    broker = new OwnBroker(Number(values['broker-port']), path.join(work, 'kafka'));
    progress(`starting a private broker on ${broker.brokers}`);
    await broker.start();
    brokers = broker.brokers;
  }
  const stack = new Stack({
    brokers,
    workDir: work,
    prefix: `bench${Date.now().toString(36)}.`,
    log: progress,
    env: serviceEnv(values['service-env'], {
      ingest: { ...DEPLOYED_ENV, LOG_LEVEL: 'warn' },
      validate: { ...DEPLOYED_ENV, LOG_LEVEL: 'warn' },
      'merge-compaction': { ...DEPLOYED_ENV },
      'query-api': { ...DEPLOYED_ENV, LOG_LEVEL: 'warn' },
    }),
  });
  // Ctrl-C / SIGTERM: stop the services and the private broker rather than orphan them.
  const onSignal = () => {
    progress('interrupted: stopping the stack');
    void stack
      .close()
      .then(() => broker?.stop())
      .finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await stack.createTopics();
    await stack.startAll();
    const seed = Number(values.seed);
    const drainTimeoutMs = Number(values['drain-timeout']) * 1000;
    const stream = loadStream(seed);
    const e2e = await runE2e({
      stack,
      brokerPid: broker?.pid(),
      seconds: Number(values.seconds),
      rate: Number(values.rate),
      batchSize: Number(values.batch),
      concurrency: Number(values.concurrency),
      seed,
      stream,
      ceilingEvents: Number(values['ceiling-events']),
      drainTimeoutMs,
      progress,
    });
    const backlog = Number(values.backlog) > 0 ? await runBacklog(stack, { events: Number(values.backlog), stream, drainTimeoutMs, brokerPid: broker?.pid(), progress }) : undefined;
    const s = e2e.sluice;
    const goals = {
      // A run that lost or doubled an event, or did not drain, measured nothing worth a number.
      allDeliveredOnce: s.delivered.exactlyOnce && s.delivered.drained,
      sustained50kPerSecond: s.sustainedEventsPerSecond >= 50_000,
      freshnessP95Under2s: s.probesTimedOut === 0 && s.freshnessSeconds.p95 <= 2,
      everyServiceUnder300MbRss: Object.entries(s.processes).filter(([k]) => !['broker', 'load-driver'].includes(k)).every(([, v]) => v.peakRssMb < 300),
      backlogDrained: backlog ? backlog.drained : null,
    };
    const result = { command, at: new Date().toISOString(), ...e2e, backlog, goals };
    writeFileSync(path.join(out, 'result.json'), JSON.stringify(result, null, 2));
    const svg = renderSvg(`Sluice e2e: ${s.sustainedEventsPerSecond} ev/s sustained (${(s.ratioToCeiling * 100).toFixed(1)}% of bare Kafka ${Math.round(e2e.ceiling.eventsPerSecond)} ev/s), freshness p95 ${s.freshnessSeconds.p95?.toFixed(2)} s`, [
      {
        title: 'Throughput',
        unit: 'events/s',
        series: [
          { name: 'acknowledged by ingest', color: '#1f77b4', points: e2e.timeline.map((x) => [x.t, x.ackedPerSecond]) },
          { name: 'visible in query-api', color: '#2ca02c', points: e2e.timeline.map((x) => [x.t, x.visiblePerSecond]) },
        ],
      },
      {
        title: 'Consumer lag',
        unit: 'records',
        series: [
          { name: 'validate (raw)', color: '#d62728', points: e2e.timeline.map((x) => [x.t, x.lagValidate || 0]) },
          { name: 'merge-compaction (valid)', color: '#9467bd', points: e2e.timeline.map((x) => [x.t, x.lagMerge || 0]) },
        ],
      },
      { title: 'Freshness: produced → visible via query-api', unit: 's', series: [{ name: 'probe', color: '#ff7f0e', points: e2e.freshness, dots: true }] },
      {
        title: 'RSS',
        unit: 'MB',
        series: ['ingest', 'validate', 'merge-compaction', 'query-api', 'broker'].map((name, i) => ({
          name,
          color: ['#1f77b4', '#d62728', '#9467bd', '#2ca02c', '#7f7f7f'][i],
          points: e2e.timeline.filter((x) => x.procs[name]).map((x): [number, number] => [x.t, x.procs[name].rssMb]),
        })),
      },
    ]);
    writeFileSync(path.join(out, 'chart.svg'), svg);
    await svgToPng(svg, path.join(out, 'chart.png'));
    const { timeline: _t, freshness: _f, ...summary } = result;
    process.stdout.write(`${JSON.stringify({ ...summary, backlog: backlog ? { ...backlog, timeline: undefined } : undefined }, null, 2)}\n`);
    progress(`wrote ${path.join(out, 'result.json')} and chart.png`);
  } finally {
    await stack.close();
    await broker?.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
