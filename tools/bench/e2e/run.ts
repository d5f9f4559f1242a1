/**
 * End-to-end benchmark of the whole local stack (ingest → validate → merge-compaction →
 * query-api) against the same machine's bare Kafka pass-through, measured in the same run.
 *
 *   npx tsx tools/bench/e2e/run.ts [--seconds 60] [--rate 0] [--batch 1000] [--concurrency 8]
 *       [--ceiling-events 300000] [--backlog 0] [--seed 1] [--broker-port 29192 | --brokers host:port]
 *       [--out .sluice/bench/e2e] [--drain-timeout 300] [--service-env merge-compaction:KEY=VALUE ...]
 *       [--merge-split] [--preload]
 *
 * Each service starts with the environment it has as deployed where it matters for the numbers:
 * the traces sampled and its manifest's runtime settings: NODE_OPTIONS (V8 heap and young
 * generation; since 2026-12-04, before that V8's defaults) and MALLOC_ARENA_MAX (glibc's malloc
 * arenas; since 2026-12-04 21:20 UTC). --service-env sets one environment variable of one
 * service on top (repeatable), e.g. `merge-compaction:SLUICE_DUCKDB_MEMORY_MB=512`.
 * --merge-split runs merge-compaction as deploy/k8s does, two processes: `SLUICE_ROLES=tier1` and
 * `tier2,compaction` (`merge-compaction-1`, with the folder manifest's runtime settings but for
 * those --service-env sets for merge-compaction); the RSS goal holds per process (per pod).
 * --preload sends version 1 of every entity (~170,000 events) first and waits until silver shows
 * them, so the load meets tables of their steady-state size (rates and freshness leave it out).
 * --rate 0 offers as much as ingest acknowledges. Writes <out>/result.json, chart.svg, chart.png
 * (throughput, lag and freshness over time) and prints progress every 5 s. See docs/bench/e2e.md.
 * Exit status: 0 every goal the run could judge was met; 3 a goal was missed; 1 the run failed
 * or bronze did not hold exactly the acknowledged events (its numbers mean nothing then).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { renderSvg, svgToPng } from '../../src/bench/chart';
import { loadStream, runBacklog, runE2e } from '../../src/bench/e2e';
import { FOLDER_MANIFEST, deployedEnvOf, runtimeEnvOf } from '../../src/bench/service-bundle';
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

async function main(): Promise<number> {
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
      'merge-split': { type: 'boolean', default: false },
      preload: { type: 'boolean', default: false },
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
  const running: { stack?: Stack } = {};
  // Stops the services, deletes the run's topics from a broker it did not start, and stops the
  // private broker: once, whether the run ends or is interrupted.
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      const stack = running.stack;
      await stack?.close();
      if (stack && values.brokers) await stack.deleteTopics().catch((err: Error) => progress(`could not delete the run's topics: ${err.message}`));
      await broker?.stop();
    })());
  // Ctrl-C / SIGTERM / SIGHUP: clean up rather than orphan the broker (it runs in a session of
  // its own). Installed before the broker starts.
  const onSignal = () => {
    progress('interrupted: stopping the stack');
    void cleanUp().finally(() => process.exit(130));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, onSignal);
  let brokers = values.brokers;
  if (!brokers) {
    broker = new OwnBroker(Number(values['broker-port']), path.join(work, 'kafka'));
    progress(`starting a private broker on ${broker.brokers}`);
    await broker.start();
    brokers = broker.brokers;
  }
  // The folder runs with its own manifest's runtime settings, but for those --service-env sets for merge-compaction.
  const folderRuntime = Object.fromEntries(
    Object.entries(runtimeEnvOf(FOLDER_MANIFEST)).filter(([key]) => !values['service-env'].some((setting) => setting.startsWith(`merge-compaction:${key}=`))),
  );
  const stack = new Stack({
    brokers,
    workDir: work,
    prefix: `bench${Date.now().toString(36)}.`,
    log: progress,
    env: serviceEnv(values['service-env'], {
      ingest: { ...deployedEnvOf('ingest'), LOG_LEVEL: 'warn' },
      validate: { ...deployedEnvOf('validate'), LOG_LEVEL: 'warn' },
      'merge-compaction': { ...deployedEnvOf('merge-compaction') },
      'query-api': { ...deployedEnvOf('query-api'), LOG_LEVEL: 'warn' },
    }),
    // As deploy/k8s runs it: one deployment for tier 1, one for tier 2 and compaction.
    // The folder with its own manifest's runtime settings (NODE_OPTIONS, MALLOC_ARENA_MAX).
    instances: values['merge-split']
      ? {
          'merge-compaction': [
            { SLUICE_ROLES: 'tier1' },
            { SLUICE_ROLES: 'tier2,compaction', ...folderRuntime },
          ],
        }
      : undefined,
  });
  running.stack = stack;
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
      preload: values.preload,
      drainTimeoutMs,
      progress,
    });
    const s = e2e.sluice;
    const load = { acked: s.acked, digest: BigInt(s.delivered.idDigest), drained: s.delivered.drained };
    const backlog = Number(values.backlog) > 0 ? await runBacklog(stack, { events: Number(values.backlog), stream, drainTimeoutMs, brokerPid: broker?.pid(), load, progress }) : undefined;
    const goals = judgeGoals(e2e, backlog);
    const result = { command, at: new Date().toISOString(), ...e2e, backlog, goals };
    writeFileSync(path.join(out, 'result.json'), JSON.stringify(result, null, 2));
    const svg = renderSvg(`Sluice e2e: ${s.sustainedEventsPerSecond} ev/s sustained (${(s.ratioToCeiling * 100).toFixed(1)}% of bare Kafka ${Math.round(e2e.ceiling.eventsPerSecond)} ev/s), freshness p95 ${s.freshnessSeconds.p95?.toFixed(2)} s`, [
      {
        title: 'Throughput',
        unit: 'events/s',
        series: [
          { name: 'acknowledged by ingest', color: '#1f77b4', points: e2e.timeline.map((x) => [x.t, x.ackedPerSecond]) },
          { name: 'visible in query-api', color: '#2ca02c', points: e2e.timeline.filter((x) => !Number.isNaN(x.visiblePerSecond)).map((x) => [x.t, x.visiblePerSecond]) },
        ],
      },
      {
        title: 'Consumer lag',
        unit: 'records',
        series: [
          // A failed lag read is a gap, not a zero.
          { name: 'validate (raw)', color: '#d62728', points: e2e.timeline.filter((x) => !Number.isNaN(x.lagValidate)).map((x) => [x.t, x.lagValidate]) },
          { name: 'merge-compaction (valid)', color: '#9467bd', points: e2e.timeline.filter((x) => !Number.isNaN(x.lagMerge)).map((x) => [x.t, x.lagMerge]) },
        ],
      },
      { title: 'Freshness: produced → visible via query-api', unit: 's', series: [{ name: 'probe', color: '#ff7f0e', points: e2e.freshness, dots: true }] },
      {
        title: 'RSS',
        unit: 'MiB',
        series: ['ingest', 'validate', 'merge-compaction', 'merge-compaction-1', 'query-api', 'broker'].map((name, i) => ({
          name,
          color: ['#1f77b4', '#d62728', '#9467bd', '#8c564b', '#2ca02c', '#7f7f7f'][i],
          points: e2e.timeline.filter((x) => x.procs[name]).map((x): [number, number] => [x.t, x.procs[name].rssMiB]),
        })).filter((series) => series.points.length > 0),
      },
    ]);
    writeFileSync(path.join(out, 'chart.svg'), svg);
    await svgToPng(svg, path.join(out, 'chart.png'));
    const { timeline: _t, freshness: _f, ...summary } = result;
    process.stdout.write(`${JSON.stringify({ ...summary, backlog: backlog ? { ...backlog, timeline: undefined } : undefined }, null, 2)}\n`);
    progress(`wrote ${path.join(out, 'result.json')} and chart.png`);
    const failed = Object.entries(goals).filter(([, g]) => g.met === false).map(([name]) => name);
    if (failed.length > 0) progress(`goals not met: ${failed.join(', ')}`);
    // A run whose delivery failed measured nothing (exit 1); a run that missed a goal exits 3.
    return !goals.allDeliveredOnce.met ? 1 : failed.length > 0 ? 3 : 0;
  } finally {
    await cleanUp();
  }
}

/** The goals, each met, missed, or not judged by this run (null, with why). */
interface Goal {
  readonly goal: string;
  readonly met: boolean | null;
  readonly measured: unknown;
  readonly why?: string;
}

/** MB as the goals state them (10^6 bytes), from MiB as /proc reports them. */
const mb = (mib: number) => Math.round((mib * 1048576) / 1e6);

function judgeGoals(e2e: Awaited<ReturnType<typeof runE2e>>, backlog: Awaited<ReturnType<typeof runBacklog>> | undefined): Record<string, Goal> {
  const s = e2e.sluice;
  // The backlog phase when it ran (not skipped).
  const ran = backlog?.ran ? backlog : undefined;
  // Judged at the goal's load only when the pipeline took it: a max-rate run that reached 15k/s says nothing of 50k/s.
  const atFullLoad = s.ackedPerSecond >= 50_000;
  const services = Object.entries(s.processes).filter(([k]) => SERVICES.includes(k));
  const allSampled = SERVICES.every((k) => s.processes[k] !== undefined);
  const backlogPeaks = Object.entries(ran?.peakRssMiB ?? {}).filter(([k]) => k !== 'broker');
  const restarted = Object.keys(s.restarts).length > 0 || Object.keys(ran?.restarts ?? {}).length > 0;
  const backlogJudged = ran !== undefined && ran.events >= 10_000_000;
  return {
    // A run that lost or doubled an event, or did not drain, measured nothing worth a number.
    allDeliveredOnce: {
      goal: 'bronze holds exactly the acknowledged events, once each, after the drain (and after the backlog, when one ran)',
      met: s.delivered.exactlyOnce && s.delivered.drained && (backlog === undefined || (ran !== undefined && ran.drained && ran.delivered.exactlyOnce)),
      measured: { load: s.delivered, backlog: ran?.delivered ?? null },
    },
    sustained50kFor10Minutes: {
      goal: '≥ 50,000 events/s sustained for 10 minutes',
      met: s.loadSeconds >= 600 ? s.sustainedEventsPerSecond >= 50_000 : null,
      measured: { sustainedEventsPerSecond: s.sustainedEventsPerSecond, loadSeconds: s.loadSeconds },
      ...(s.loadSeconds >= 600 ? {} : { why: `the load ran ${s.loadSeconds} s, not 600` }),
    },
    freshnessP95Under2sAt50k: {
      goal: 'freshness p95 ≤ 2 s at the 50k events/s load (every probe visible)',
      met: atFullLoad ? s.probesTimedOut === 0 && s.freshnessSeconds.p95 <= 2 : null,
      measured: { p95Seconds: s.freshnessSeconds.p95, probesTimedOut: s.probesTimedOut, ackedPerSecond: s.ackedPerSecond },
      ...(atFullLoad ? {} : { why: `ingest took ${s.ackedPerSecond} events/s, below the goal's load` }),
    },
    everyServiceUnder300MB: {
      goal: 'every service under 300 MB RSS (peak, VmHWM, 10^6 bytes) in the load and the backlog, with no restart',
      met: allSampled ? !restarted && [...services.map(([, v]) => v.peakRssMiB), ...backlogPeaks.map(([, v]) => v)].every((mib) => mb(mib) < 300) : null,
      ...(allSampled ? {} : { why: `not every service was sampled (${services.map(([k]) => k).join(', ') || 'none'}: /proc missing?)` }),
      measured: {
        peakMb: Object.fromEntries(services.map(([k, v]) => [k, mb(v.peakRssMiB)])),
        backlogPeakMb: ran ? Object.fromEntries(backlogPeaks.map(([k, v]) => [k, mb(v)])) : null,
        restarts: { load: s.restarts, backlog: ran?.restarts ?? null },
      },
    },
    backlog10MDrains: {
      goal: 'a backlog of 10M events drains, exactly once, without a restart',
      met: backlogJudged ? ran.drained && ran.delivered.exactlyOnce && Object.keys(ran.restarts).length === 0 : null,
      measured: ran ? { events: ran.events, drained: ran.drained, drainSeconds: ran.drainSeconds, delivered: ran.delivered, restarts: ran.restarts } : (backlog ?? null),
      ...(backlogJudged ? {} : { why: backlog === undefined ? 'no backlog run (--backlog)' : ran === undefined ? 'the backlog was skipped: the load did not drain' : `a backlog of ${ran.events} events, not 10M` }),
    },
  };
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
