import { mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { HttpSender, RawSender, driveLoad, type Sender } from '../bench/load';
import { DEMO_API_KEY, OwnBroker, Stack, sleep } from '../bench/stack';
import { EventStream, Oracle, Rng, type GeneratedEvent } from '../generator';
import { auditWhenDrained, type AuditReport, type AuditTarget, type LakeLocation } from './audit';
import { FaultyS3Proxy } from './s3-proxy';
import { LakeMount, SCENARIOS, checkTablesOpen, type FaultContext, type Scenario } from './scenarios';

const cleanups = new Set<() => Promise<void>>();

/**
 * How long a sender retries one batch (ingest answering 429/503, the broker away) before the run
 * fails. Well past a scenario's longest outage (a broker down 20 s plus its restart), and short
 * enough that a pipeline that never takes events again fails the run with the sender's last
 * answer, inside a CI test's time.
 */
const SEND_GIVE_UP_MS = 120_000;
/**
 * One attempt of a raw batch fails after this long, and the next goes through a new producer
 * (see RawSender): a producer wedged by a broker restart costs seconds, not the give-up time.
 */
const RAW_DELIVERY_TIMEOUT_MS = 15_000;
/** How often the load logs what it has had acknowledged. */
const PROGRESS_EVERY_MS = 10_000;

/**
 * Stops the stacks, private brokers and mounts of every run in progress (for a CLI's SIGINT /
 * SIGTERM handler, so an interrupted run leaves no service, broker or mount behind).
 */
export async function abortAllRuns(): Promise<void> {
  await Promise.allSettled([...cleanups].map((c) => c()));
}

/** Settings of one chaos run. */
export interface ChaosOptions {
  /** Scenario names; several are injected one after the other during the same load, audited once. */
  readonly scenarios: readonly string[];
  /** Seconds of load (faults are injected within it). */
  readonly seconds: number;
  /** Target events/s of the load. */
  readonly rate: number;
  readonly seed: number;
  /** Shared broker for scenarios that do not stop it. */
  readonly brokers?: string;
  /** Port of the private broker for scenarios that stop it. */
  readonly brokerPort?: number;
  /** Work directory (lake, logs, private broker data); removed afterwards unless `keep`. */
  readonly workDir: string;
  readonly keep?: boolean;
  /** How long the pipeline may take to reach the oracle after the load, ms. */
  readonly drainTimeoutMs?: number;
  readonly log?: (line: string) => void;
  /** The S3-compatible server for scenarios that put the lake on S3 (behind a fault proxy). */
  readonly s3?: ChaosS3Server;
}

/** An S3-compatible server and a bucket on it the run may write under. */
export interface ChaosS3Server {
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly bucket: string;
}

/** The test S3 server from SLUICE_TEST_S3_* (tools/services.d/10-s3.sh env), or undefined. */
export function s3FromEnv(env: NodeJS.ProcessEnv = process.env): ChaosS3Server | undefined {
  const { SLUICE_TEST_S3_ENDPOINT: endpoint, SLUICE_TEST_S3_ACCESS_KEY: accessKey, SLUICE_TEST_S3_SECRET_KEY: secretKey, SLUICE_TEST_S3_BUCKET: bucket } = env;
  return endpoint && accessKey && secretKey && bucket ? { endpoint, accessKey, secretKey, bucket } : undefined;
}

/** What one chaos run did and found. */
export interface ChaosResult {
  readonly scenario: string;
  readonly what: string;
  readonly seed: number;
  readonly seconds: number;
  readonly rate: number;
  readonly eventsSent: number;
  readonly faults: string[];
  /** When the load's last batch was sent (the faults all come before it, see FAULT_TAIL_MS). */
  readonly loadEndedAt: string;
  readonly restarts: Record<string, number>;
  readonly retries: { http: number; raw: number };
  /** Findings besides the oracle audit (ingest disagreements, crashes on poison, tables that do not open). */
  readonly problems: string[];
  readonly audit: AuditReport;
  readonly passed: boolean;
  /**
   * On a failed run, each service's warnings, errors and consumer-group events grouped by message (count, first and last time),
   * so a CI log shows what the services saw without the work directory.
   */
  readonly warnings: string[];
  /** What was audited (kept on disk only with `keep`). */
  readonly target: AuditTarget;
  /** The oracle the run was audited against. */
  readonly oracle: Oracle;
}

/** How long the load goes on after the last fault, so its effects meet load too. */
const FAULT_TAIL_MS = 5_000;

/**
 * Runs one scenario: a fresh stack (topics under a random prefix, the lake in `workDir`), load
 * from the generator — half the batches through ingest's HTTP API, half produced straight into
 * raw — while the scenario injects its faults; then waits for the pipeline to drain and audits
 * it against the oracle. Stops by itself: load for `seconds`, drain bounded by `drainTimeoutMs`.
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  const unknown = o.scenarios.filter((n) => !SCENARIOS[n]);
  if (o.scenarios.length === 0 || unknown.length > 0) throw new Error(`unknown scenario ${JSON.stringify(unknown)}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  const list = o.scenarios.map((n) => SCENARIOS[n]);
  const scenario = {
    name: o.scenarios.join('+'),
    what: list.map((s) => s.what).join('; then '),
    ownBroker: list.some((s) => s.ownBroker),
    mount: list.find((s) => s.mount)?.mount,
    s3: list.some((s) => s.s3),
    inject: (ctx: FaultContext) => injectInTurn(list, ctx),
  };
  checkRunNumbers(o);
  const log = o.log ?? (() => undefined);
  const runId = `c${o.seed.toString(36)}${Date.now().toString(36)}`;
  // Start from nothing: tables or broker data left by an interrupted run would show up in this
  // run's audit as events nobody acknowledged. Only what this tool creates there is removed.
  for (const sub of ['lake', 'kafka', 'logs']) rmSync(path.join(o.workDir, sub), { recursive: true, force: true });
  mkdirSync(o.workDir, { recursive: true });
  const lakeDir = path.join(o.workDir, 'lake');
  mkdirSync(lakeDir, { recursive: true });
  let mount: LakeMount | undefined;
  let broker: OwnBroker | undefined;
  let stack: Stack | undefined;
  let s3Proxy: FaultyS3Proxy | undefined;
  const senders: Sender[] = [];
  const cleanup = async () => {
    await stack?.close();
    await broker?.stop();
    await s3Proxy?.close();
    mount?.unmount();
  };
  cleanups.add(cleanup);
  try {
    if (scenario.mount) {
      mount = new LakeMount(lakeDir, scenario.mount.sizeMb);
      mount.mount();
    }
    let brokers = o.brokers;
    if (scenario.ownBroker) {
      broker = new OwnBroker(o.brokerPort ?? 19392, path.join(o.workDir, 'kafka'));
      log(`starting a private broker on ${broker.brokers}`);
      await broker.start();
      brokers = broker.brokers;
    }
    if (!brokers) throw new Error('no broker: pass brokers (or a scenario with its own broker)');
    if (scenario.s3 && scenario.mount) throw new Error(`${scenario.name}: a scenario on an S3 lake cannot be combined with one on a mounted lake`);
    if (scenario.s3 && !o.s3) throw new Error(`${scenario.name} needs an S3 server: start it (bash tools/services.d/10-s3.sh start) and export what 'bash tools/services.d/10-s3.sh env' prints`);
    if (scenario.s3 && o.s3) {
      s3Proxy = await FaultyS3Proxy.start(o.s3.endpoint);
      log(`lake on ${o.s3.endpoint} bucket ${o.s3.bucket}, through the fault proxy ${s3Proxy.url}`);
    }
    stack = new Stack({
      brokers,
      workDir: o.workDir,
      prefix: `${runId}.`,
      log,
      env: {
        // Stall limits below the defaults, so a hung Kafka call heals (exit, supervisor restart)
        // within the drain time; the validate limit still exceeds its 60 s transaction timeout.
        // ingest's wedge limit likewise: a producer wedged by a broker restart is replaced well
        // within the senders' give-up time.
        ingest: { INGEST_WEDGE_AFTER_MS: '30000' },
        validate: { VALIDATE_MAX_EVENT_BYTES: '524288', VALIDATE_MAX_BATCH_WAIT_MS: '50', VALIDATE_STALL_TIMEOUT_MS: '75000', VALIDATE_PROGRESS_WINDOW_MS: '30000' },
        // Dedup memory of 2,000 ids (about one 5 s slice at these rates): copies and older versions
        // that come seconds later are looked up in bronze, the path a production window takes for
        // what falls out of its memory, here under every fault.
        'merge-compaction': { SLUICE_BATCH_MAX_MS: '500', SLUICE_MERGE_INTERVAL_MS: '500', SLUICE_COMPACTION_INTERVAL_MS: '5000', SLUICE_STALL_TIMEOUT_MS: '60000', SLUICE_ASSIGNMENT_WINDOW_MS: '30000', SLUICE_DEDUP_MAX_IDS: '2000' },
      },
      lakeS3: s3Proxy && o.s3 ? { ...o.s3, endpoint: s3Proxy.url, prefix: `chaos/${runId}` } : undefined,
    });
    await stack.createTopics();
    await stack.startAll();
    log(`stack ready; ${scenario.name}: ${scenario.what}`);

    const oracle = new Oracle();
    // Older versions held back up to 3,000 events and copies up to 5,000 (seconds at the scenarios'
    // rates): they arrive after the newer version, or the original, was committed and folded.
    const stream = new EventStream({ seed: o.seed, runId, clock: () => Date.now(), entities: { orders: 2000, inventory: 800, clickstream: 1000 }, reorderDistance: 3000, duplicateDistance: 5000 });
    const st = stack;
    const http = new HttpSender(() => st.ingestUrl, DEMO_API_KEY, oracle, SEND_GIVE_UP_MS);
    const raw = new RawSender(brokers, stack.topics.raw, oracle, { giveUpMs: SEND_GIVE_UP_MS, deliveryTimeoutMs: RAW_DELIVERY_TIMEOUT_MS });
    senders.push(http, raw);
    let flip = 0;
    const mixed: Sender = {
      retries: 0,
      mismatches: [],
      send: (batch: readonly GeneratedEvent[]) => (flip++ % 2 === 0 ? http : raw).send(batch),
      close: async () => undefined,
    };
    const faults: string[] = [];
    const loadEndsAt = Date.now() + o.seconds * 1000;
    const ctx: FaultContext = {
      stack,
      broker,
      mount,
      s3Proxy,
      rng: new Rng(o.seed ^ 0x5eed),
      runId,
      loadEndsAt,
      log,
      fault: (line) => {
        faults.push(`${new Date().toISOString()} ${line}`);
        log(`[fault] ${line}`);
      },
      faultCount: () => faults.length,
      poisonWithoutId: 0,
      replaysSent: 0,
      poisonIds: new Map(),
      poisonSources: new Map(),
      problems: [],
    };
    const batchSize = Math.max(10, Math.min(500, Math.round(o.rate / 10)));
    let acked = 0;
    const progress = setInterval(() => log(`load: ${acked} events acknowledged, retries http ${http.retries} raw ${raw.retries} (raw producers replaced ${raw.replaced})`), PROGRESS_EVERY_MS);
    // Both settle before anything is cleaned up: a load that fails must not leave the injection
    // running on (a broker started again after the cleanup stopped it).
    // The load runs its `seconds` and on until FAULT_TAIL_MS after the last fault: a step that
    // outlasts the nominal load (a kill waits for the restart, a scale step for the rebalance)
    // still hits a pipeline under load, never an idle one.
    const stopLoad = new AbortController();
    const injecting = scenario.inject(ctx);
    injecting.then(
      () => sleep(Math.max(loadEndsAt, Date.now() + FAULT_TAIL_MS) - Date.now()).then(() => stopLoad.abort()),
      () => stopLoad.abort(),
    );
    let loadEndedAt = '';
    const [load, injected] = await Promise.allSettled([
      driveLoad({ next: () => stream.next(), sender: mixed, rate: o.rate, durationMs: Infinity, signal: stopLoad.signal, batchSize, concurrency: 4, onAcked: (_, b) => (acked += b.length) }).finally(
        () => (loadEndedAt = new Date().toISOString()),
      ),
      injecting,
    ]).finally(() => clearInterval(progress));
    if (load.status === 'rejected') throw load.reason;
    if (injected.status === 'rejected') throw injected.reason;
    const sent = load.value;
    // Senders close before the audit: a raw producer retired in the background may still deliver
    // (repeats the pipeline must land once), and that has to happen before the lake is read.
    await Promise.all(senders.splice(0).map((s) => s.close().catch(() => undefined)));
    log(`load done: ${sent} events acknowledged; waiting for every service to be ready, then the drain`);
    for (const p of stack.procs.values()) await stack.waitReady(p, 180_000);
    log('every service ready; waiting for the drain');
    // The audit reads the server itself, never through the proxy.
    const lake: LakeLocation = {
      root: stack.lakeRoot,
      s3: o.s3 && s3Proxy
        ? { endpoint: o.s3.endpoint, credentials: { accessKeyId: o.s3.accessKey, secretAccessKey: o.s3.secretKey }, cacheDir: path.join(o.workDir, 's3-cache', 'audit'), cacheBytesPerTable: 1024 ** 3 }
        : undefined,
    };
    const target: AuditTarget = { lake, brokers, dlqTopic: stack.topics.dlq, topics: stack.topics, poisonWithoutId: ctx.poisonWithoutId, poisonIds: new Set(ctx.poisonIds.keys()), poisonSources: ctx.poisonSources, invalidSources: raw.invalidSources, replaysSent: ctx.replaysSent };
    const audit = await auditWhenDrained(target, oracle, o.drainTimeoutMs ?? 180_000);
    log(`audit done: drained in ${audit.drainSeconds.toFixed(1)} s, ${audit.problems.length} problem(s)`);
    const problems = [...ctx.problems, ...http.mismatches, ...(await checkTablesOpen(lake))];
    // An audit of nothing proves nothing.
    if (sent === 0) problems.push('no event was acknowledged during the load');
    // Nor does a fault on an idle pipeline.
    for (const f of faults) if (f.slice(0, 24) > loadEndedAt) problems.push(`a fault after the load ended (${loadEndedAt}): ${f}`);
    const restarts = stack.restartCounts();
    const passed = problems.length === 0 && audit.problems.length === 0;
    const warnings = passed ? [] : st.instanceIds().flatMap((id) => warningsOf(id, st.logText(id)));
    return {
      scenario: scenario.name,
      what: scenario.what,
      seed: o.seed,
      seconds: o.seconds,
      rate: o.rate,
      eventsSent: sent,
      faults,
      loadEndedAt,
      restarts,
      retries: { http: http.retries, raw: raw.retries },
      problems,
      audit,
      passed,
      warnings,
      target,
      oracle,
    };
  } finally {
    cleanups.delete(cleanup);
    await Promise.all(senders.map((s) => s.close().catch(() => undefined)));
    await stack?.close();
    await broker?.stop().catch(() => undefined);
    await s3Proxy?.close();
    mount?.unmount();
    if (!o.keep) rmSync(o.workDir, { recursive: true, force: true });
  }
}

/**
 * A failed run in a few short lines for a test assertion: the faults and each service's warnings
 * first (they say what went wrong), then the findings cut to `maxChars` each. The CI summary
 * keeps only the start of a failure message, and one finding can quote whole rows.
 */
export function failureReport(result: ChaosResult, maxChars = 160): string[] {
  const findings = [...result.problems, ...result.audit.problems];
  if (findings.length === 0) return [];
  const cut = (line: string) => (line.length > maxChars ? `${line.slice(0, maxChars)}…` : line);
  return [...result.faults.map((f) => `fault: ${f}`), ...result.warnings, ...findings].map(cut);
}

const WARNING_LEVELS = new Set(['warn', 'error', 'fatal']);
/** Consumer-group events, listed too: whether a silent consumer held partitions after a fault. */
const GROUP_EVENT = /^partitions (assigned|revoked)/;

/**
 * A service log's warn/error/fatal lines and its consumer-group events grouped by message and
 * code: "id: N× msg [code] (first at …, last at …)".
 */
export function warningsOf(id: string, logText: string): string[] {
  const groups = new Map<string, { n: number; first: string; last: string }>();
  for (const line of logText.split('\n')) {
    let entry: { level?: string; msg?: string; code?: string; err?: { code?: string }; time?: string };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (!WARNING_LEVELS.has(entry.level ?? '') && !GROUP_EVENT.test(entry.msg ?? '')) continue;
    const code = entry.code ?? entry.err?.code;
    const key = `${entry.msg ?? '(no message)'}${code ? ` [${code}]` : ''}`;
    const time = entry.time?.slice(11, 23) ?? '?';
    const g = groups.get(key);
    if (g) {
      g.n++;
      g.last = time;
    } else {
      groups.set(key, { n: 1, first: time, last: time });
    }
  }
  return [...groups].map(([key, g]) => `${id}: ${g.n}× ${key} (first at ${g.first}${g.n > 1 ? `, last at ${g.last}` : ''})`);
}

/**
 * Injects each scenario's faults in turn. A scenario stops early when the load ends before its
 * turn (a short `--seconds`, the later part of `a+b`): that is a problem of the run, never a
 * quiet pass.
 */
export async function injectInTurn(list: readonly Pick<Scenario, 'name' | 'inject'>[], ctx: FaultContext): Promise<void> {
  for (const s of list) {
    const before = ctx.faultCount();
    await s.inject(ctx);
    if (ctx.faultCount() === before) ctx.problems.push(`scenario ${s.name} injected no fault (the load ended before its turn; give it more --seconds)`);
  }
}

/** Refuses settings that would make a run that tests nothing (NaN from a typo like `60s`, zero load). */
function checkRunNumbers(o: ChaosOptions): void {
  const positive: Record<string, number | undefined> = { seconds: o.seconds, rate: o.rate, drainTimeoutMs: o.drainTimeoutMs ?? 1 };
  const problems = Object.entries(positive)
    .filter(([, v]) => !(typeof v === 'number' && Number.isFinite(v) && v > 0))
    .map(([k, v]) => `${k} must be a positive number, got ${String(v)}`);
  if (!Number.isSafeInteger(o.seed)) problems.push(`seed must be an integer, got ${String(o.seed)}`);
  if (problems.length > 0) throw new Error(`chaos run: ${problems.join('; ')}`);
}
