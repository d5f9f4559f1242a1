import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { CONTRACT_NAMES, DLQ_TOPIC, RAW_TOPIC, validTopic } from '@sluice/contracts';
import { KafkaAdmin } from '@sluice/kafka';
import { ephemeralPortRange, freePort } from '@sluice/testing';
import { LOCAL_CLUSTER, planTopics } from '../topics';

import { bundleService, ROOT, spawnService, type ServiceName } from './service-bundle';

export { ROOT, type ServiceName } from './service-bundle';

/** Demo credentials the local stack uses (tools/run-local.sh has the same). */
export const DEMO_API_KEY = 'demo-ingest-key-0000000000000000';
export const DEMO_QUERY_TOKEN = 'demo-query-token-000000000000000';

/** Settings of a {@link Stack}. */
export interface StackOptions {
  readonly brokers: string;
  /** Work directory: the lake (`lake/`), logs (`logs/`). */
  readonly workDir: string;
  /** Prefix of every topic and consumer group (a shared broker holds many runs). */
  readonly prefix: string;
  /** Extra environment per service (tuning, e.g. SLUICE_BATCH_MAX_MS). */
  readonly env?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Restart a service that exits on its own (a supervisor, as Kubernetes would); default true. */
  readonly supervise?: boolean;
  /** Called with one line per lifecycle event (start, exit, restart). */
  readonly log?: (line: string) => void;
  /** The lake on an S3-compatible server (`s3://bucket/prefix`) instead of `workDir/lake`. */
  readonly lakeS3?: StackS3Lake;
  /**
   * The instances {@link Stack.startAll} starts per service, each one's environment on top of the
   * service's; default one instance each. E.g. merge-compaction as deployed: `[{ SLUICE_ROLES:
   * 'tier1' }, { SLUICE_ROLES: 'tier2,compaction' }]`.
   */
  readonly instances?: Partial<Record<ServiceName, readonly Record<string, string>[]>>;
}

/** Where an S3 lake is and how the services reach it. */
export interface StackS3Lake {
  /** The endpoint the services use (the server's, or a fault proxy's in front of it). */
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly bucket: string;
  /** Key prefix of this stack's tables inside the bucket. */
  readonly prefix: string;
}

/** One running service process. */
export interface ServiceProcess {
  /** `<service>` or `<service>-<n>` for extra instances. */
  readonly id: string;
  readonly service: ServiceName;
  readonly instance: number;
  /** The bundle it runs (deploy/bundle.sh output). */
  readonly main: string;
  pid: number;
  /** Port of its HTTP API (ingest, query-api) or ops server (validate, merge-compaction). */
  readonly port: number;
  /** Port of its ops server (/metrics): `port` for validate and merge-compaction, another for ingest and query-api. */
  readonly opsPort: number;
  restarts: number;
  /** Times it exited (each life's end, restarted or not). */
  exits: number;
  child: ChildProcess;
  /** Set while the stack itself stops it (no supervisor restart). */
  stopping: boolean;
  /** Environment of this instance on top of the service's (e.g. SLUICE_ROLES=tier1). */
  readonly env: Record<string, string>;
  /** How its last life ended and the last line it printed, once it has exited. */
  lastExit?: string;
}

/** Characters of a service's output kept in memory, for the last line before an exit. */
const OUTPUT_TAIL_CHARS = 4096;
/** Characters of that line quoted. */
const EXIT_LINE_CHARS = 400;

/** Waits until `check` returns true, polling every `everyMs`; throws `what` after `timeoutMs`. */
export async function waitUntil(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await Promise.resolve(check()).catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The whole pipeline as child processes on one machine: topics under a prefix, the lake in a
 * work directory, each service bundled by deploy/bundle.sh as its image is built and run
 * as `node --enable-source-maps main.js` (one process, so /proc shows the service itself), logs
 * to files, and a supervisor that restarts a service that died — what chaos scenarios kill and
 * the benchmark measures.
 */
export class Stack {
  readonly procs = new Map<string, ServiceProcess>();
  /** Restarts of the instances {@link stop} retired, by id (summed over each id's lives). */
  private readonly retiredRestarts = new Map<string, number>();
  readonly lakeRoot: string;
  readonly logDir: string;
  readonly topics: { readonly raw: string; readonly dlq: string; readonly valid: (contract: string) => string };
  private readonly logs = new Map<string, WriteStream>();
  /** main.js of each service's bundle (built once per stack, under `<workDir>/bin/`). */
  private readonly bundles = new Map<ServiceName, Promise<string>>();
  private closed = false;

  constructor(readonly options: StackOptions) {
    this.lakeRoot = options.lakeS3 ? `s3://${options.lakeS3.bucket}/${options.lakeS3.prefix}` : path.join(options.workDir, 'lake');
    this.logDir = path.join(options.workDir, 'logs');
    if (!options.lakeS3) mkdirSync(this.lakeRoot, { recursive: true });
    mkdirSync(this.logDir, { recursive: true });
    const p = options.prefix;
    this.topics = { raw: `${p}${RAW_TOPIC.name}`, dlq: `${p}${DLQ_TOPIC.name}`, valid: (c) => `${p}${validTopic(c).name}` };
  }

  /** Creates the raw, DLQ and valid topics as the topic plan declares them (partitions, configs). */
  async createTopics(): Promise<void> {
    const admin = new KafkaAdmin({ brokers: this.options.brokers, clientId: 'sluice-stack' });
    try {
      const have = new Set(await admin.listTopics());
      const plans = planTopics([RAW_TOPIC, DLQ_TOPIC, ...CONTRACT_NAMES.map((c) => validTopic(c))], { ...LOCAL_CLUSTER, namePrefix: this.options.prefix });
      for (const plan of plans) {
        if (!have.has(plan.name)) await admin.createTopic({ name: plan.name, partitions: plan.partitions, configs: plan.configs });
      }
    } finally {
      await admin.close();
    }
  }

  /** Deletes the topics {@link createTopics} made (a run on a shared broker leaves nothing behind). */
  async deleteTopics(): Promise<void> {
    const admin = new KafkaAdmin({ brokers: this.options.brokers, clientId: 'sluice-stack' });
    try {
      await admin.deleteTopics([RAW_TOPIC, DLQ_TOPIC, ...CONTRACT_NAMES.map((c) => validTopic(c))].map((s) => `${this.options.prefix}${s.name}`));
    } finally {
      await admin.close();
    }
  }

  /** Starts all four services (one instance each) and waits until each is ready. */
  async startAll(timeoutMs = 120_000): Promise<void> {
    await Promise.all((['ingest', 'validate', 'merge-compaction', 'query-api'] as const).map((s) => this.startInstances(s, timeoutMs)));
  }

  /** Starts every instance of a service that `options.instances` lays out (one by default). */
  async startInstances(service: ServiceName, timeoutMs = 120_000): Promise<void> {
    const layout = this.options.instances?.[service] ?? [{}];
    await Promise.all(layout.map((env, i) => this.start(service, i, timeoutMs, env)));
  }

  /** Stops every running instance of a service. */
  async stopInstances(service: ServiceName): Promise<void> {
    await Promise.all([...this.procs.values()].filter((p) => p.service === service).map((p) => this.stop(p.id)));
  }

  /** Starts one instance of a service and waits for its /readyz. */
  async start(service: ServiceName, instance = 0, timeoutMs = 120_000, env: Record<string, string> = {}): Promise<ServiceProcess> {
    const id = instance === 0 ? service : `${service}-${instance}`;
    if (this.procs.has(id)) throw new Error(`${id} already runs`);
    // Bundle first: a build takes seconds, and the free port should be taken right after it is found.
    const main = await this.bundle(service);
    // Below the ephemeral range (see freePort): the supervisor restarts a service on the same port.
    const port = await freePort();
    const opsPort = service === 'ingest' || service === 'query-api' ? await freePort() : port;
    const proc: ServiceProcess = { id, service, instance, main, pid: 0, port, opsPort, restarts: 0, exits: 0, child: undefined as unknown as ChildProcess, stopping: false, env };
    this.procs.set(id, proc);
    this.launch(proc);
    await this.waitReady(proc, timeoutMs);
    return proc;
  }

  /** Bundles a service once per stack (every instance and restart runs the same main.js). */
  private bundle(service: ServiceName): Promise<string> {
    let main = this.bundles.get(service);
    if (main === undefined) {
      main = bundleService(service, path.join(this.options.workDir, 'bin', service));
      this.bundles.set(service, main);
      // A failed build is not cached: the next start builds again.
      main.catch(() => this.bundles.delete(service));
    }
    return main;
  }

  /** Base URL of ingest (instance 0). */
  get ingestUrl(): string {
    return `http://127.0.0.1:${this.get('ingest').port}`;
  }

  /** Base URL of query-api (instance 0). */
  get queryUrl(): string {
    return `http://127.0.0.1:${this.get('query-api').port}`;
  }

  /** The process of that id. */
  get(id: string): ServiceProcess {
    const p = this.procs.get(id);
    if (!p) throw new Error(`no service ${id}`);
    return p;
  }

  /** Current pid of every running service, by id. */
  pids(): Record<string, number> {
    return Object.fromEntries([...this.procs.values()].filter((p) => p.pid > 0).map((p) => [p.id, p.pid]));
  }

  /** Sends `signal` to a service; with supervision on, a killed service comes back by itself. */
  kill(id: string, signal: NodeJS.Signals = 'SIGKILL'): void {
    const p = this.get(id);
    this.say(`${signal} → ${id} (pid ${p.pid})`);
    p.child.kill(signal);
  }

  /** Waits until a service answers /readyz (e.g. after a kill and the supervisor's restart). */
  async waitReady(p: ServiceProcess, timeoutMs = 120_000): Promise<void> {
    const exitsBefore = p.exits;
    try {
      await waitUntil(`${p.id} ready`, async () => {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return false;
        const r = await fetch(`http://127.0.0.1:${p.port}/readyz`, { signal: AbortSignal.timeout(2000) });
        return r.status === 200;
      }, timeoutMs, 300);
    } catch (err) {
      // A service that kept exiting says why, so the failure is not only a timeout.
      const exits = p.exits - exitsBefore;
      if (exits === 0 || p.lastExit === undefined) throw err;
      throw new Error(`${(err as Error).message} (it exited ${exits} time(s) meanwhile, the last ${p.lastExit})`);
    }
  }

  /** Stops one instance gracefully (SIGTERM, then SIGKILL after `graceMs`) and forgets it. */
  async stop(id: string, graceMs = 20_000): Promise<void> {
    const p = this.get(id);
    p.stopping = true;
    const exited = new Promise<void>((r) => (p.child.exitCode !== null || p.child.signalCode !== null ? r() : p.child.once('exit', () => r())));
    p.child.kill('SIGTERM');
    const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
    this.retiredRestarts.set(id, (this.retiredRestarts.get(id) ?? 0) + p.restarts);
    this.procs.delete(id);
  }

  /**
   * Restarts per instance id over the stack's life: the running instances' and those of instances
   * stopped since (a scaled-in instance that crash-looped still counts).
   */
  restartCounts(): Record<string, number> {
    const out: Record<string, number> = Object.fromEntries(this.retiredRestarts);
    for (const p of this.procs.values()) out[p.id] = (out[p.id] ?? 0) + p.restarts;
    return out;
  }

  /** Every instance id this stack started, running or stopped since (each has a log). */
  instanceIds(): string[] {
    return [...new Set([...this.retiredRestarts.keys(), ...this.procs.keys()])];
  }

  /** Stops every service (graceful first) and closes the log files. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.procs.keys()].map((id) => this.stop(id).catch(() => undefined)));
    for (const s of this.logs.values()) s.end();
  }

  /** Lines of a service's log file (all its restarts). */
  logText(id: string): string {
    try {
      return readFileSync(path.join(this.logDir, `${id}.log`), 'utf8');
    } catch {
      return '';
    }
  }

  private envOf(p: ServiceProcess): Record<string, string> {
    const o = this.options;
    const common = { LOG_LEVEL: 'info', OPS_PORT: String(p.opsPort) };
    const extra = { ...o.env?.[p.service], ...p.env };
    switch (p.service) {
      case 'ingest':
        return {
          ...common,
          KAFKA_BROKERS: o.brokers,
          INGEST_PORT: String(p.port),
          INGEST_RAW_TOPIC: this.topics.raw,
          // The demo key stands in for every sample system (generator, samples, probes).
          INGEST_API_KEYS: JSON.stringify([{ producer: 'bench', key: DEMO_API_KEY, contracts: ['*'], envelopeProducers: ['*'] }]),
          ...extra,
        };
      case 'validate':
        return {
          ...common,
          KAFKA_BROKERS: o.brokers,
          VALIDATE_INSTANCE_ID: `v${p.instance}`,
          VALIDATE_GROUP_ID: `${o.prefix}validate`,
          VALIDATE_RAW_TOPIC: this.topics.raw,
          VALIDATE_DLQ_TOPIC: this.topics.dlq,
          VALIDATE_VALID_TOPIC_PREFIX: o.prefix,
          ...extra,
        };
      case 'merge-compaction':
        return {
          ...common,
          SLUICE_KAFKA_BROKERS: o.brokers,
          SLUICE_MERGE_GROUP_ID: `${o.prefix}merge`,
          SLUICE_TOPIC_PREFIX: o.prefix,
          SLUICE_DLQ_TOPIC: this.topics.dlq,
          SLUICE_LAKE_ROOT: this.lakeRoot,
          ...(o.lakeS3 && {
            SLUICE_S3_ENDPOINT: o.lakeS3.endpoint,
            SLUICE_S3_ACCESS_KEY_ID: o.lakeS3.accessKey,
            SLUICE_S3_SECRET_ACCESS_KEY: o.lakeS3.secretKey,
            SLUICE_S3_CACHE_DIR: path.join(o.workDir, 's3-cache', p.id),
          }),
          ...extra,
        };
      case 'query-api':
        return {
          ...common,
          QUERY_API_PORT: String(p.port),
          QUERY_API_LAKE_ROOT: this.lakeRoot,
          ...(o.lakeS3 && {
            QUERY_API_S3_ENDPOINT: o.lakeS3.endpoint,
            QUERY_API_S3_ACCESS_KEY_ID: o.lakeS3.accessKey,
            QUERY_API_S3_SECRET_ACCESS_KEY: o.lakeS3.secretKey,
            QUERY_API_CACHE_DIR: path.join(o.workDir, 's3-cache', p.id),
          }),
          QUERY_API_TOKENS: JSON.stringify([{ name: 'bench', token: DEMO_QUERY_TOKEN, tables: ['*'] }]),
          ...extra,
        };
    }
  }

  private launch(p: ServiceProcess): void {
    let log = this.logs.get(p.id);
    if (!log) this.logs.set(p.id, (log = createWriteStream(path.join(this.logDir, `${p.id}.log`), { flags: 'a' })));
    const child = spawnService(p.main, this.envOf(p));
    p.child = child;
    p.pid = child.pid ?? 0;
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    // Decoded per stream, so a character split across two chunks stays whole.
    let tail = '';
    for (const stream of [child.stdout, child.stderr]) {
      const decoder = new StringDecoder('utf8');
      stream?.on('data', (chunk: Buffer) => void (tail = (tail + decoder.write(chunk)).slice(-OUTPUT_TAIL_CHARS)));
    }
    this.say(`started ${p.id} (pid ${p.pid}, port ${p.port})`);
    child.once('exit', (code, signal) => {
      const lastLine = tail.trimEnd().split('\n').pop()?.slice(0, EXIT_LINE_CHARS) ?? '';
      p.lastExit = `${signal ?? `code ${code}`}${lastLine ? `, last line: ${lastLine}` : ''}`;
      p.exits++;
      this.say(`${p.id} (pid ${p.pid}) exited: ${signal ?? `code ${code}`}`);
      p.pid = 0;
      if (p.stopping || this.closed || this.options.supervise === false) return;
      p.restarts++;
      // A supervisor's short back-off, so a crash loop does not spin.
      setTimeout(() => {
        if (!p.stopping && !this.closed) this.launch(p);
      }, 300);
    });
  }

  private say(line: string): void {
    this.options.log?.(`[stack] ${line}`);
  }
}

/** True while `pid` is a running broker JVM (kafka.sh's test: a reaped or zombie process has no command line). */
function isBroker(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka');
  } catch {
    return false;
  }
}

/** A private Kafka broker for scenarios that stop it (never the shared test broker). */
export class OwnBroker {
  readonly brokers: string;

  constructor(
    readonly port: number,
    readonly dataDir: string,
  ) {
    const ephemeral = ephemeralPortRange();
    if (port + 1 >= ephemeral.min && port <= ephemeral.max) {
      // See freePort: a restart would fail with "Address already in use".
      throw new Error(`broker port ${port} (and controller ${port + 1}) must lie outside the ephemeral port range ${ephemeral.min}-${ephemeral.max}, or the broker cannot be restarted while clients reconnect`);
    }
    this.brokers = `127.0.0.1:${port}`;
  }

  /**
   * Starts it (formats storage on first start) and waits until it answers metadata. A start
   * that fails (seen on the loaded machine: the JVM exits during start-up right after a stop) is
   * retried up to `attempts` times, as a supervisor would; returns the attempts it took.
   * Asynchronous, like stop(): load and services go on while the broker starts or stops.
   */
  async start(attempts = 3): Promise<number> {
    for (let i = 1; ; i++) {
      try {
        await this.run('start');
        return i;
      } catch (err) {
        if (i >= attempts) throw err;
        await sleep(5000);
      }
    }
  }

  /** Stops it (by its pid file): SIGTERM, a controlled shutdown. */
  stop(): Promise<void> {
    return this.run('stop');
  }

  /**
   * Crashes it: SIGKILL to the JVM (no controlled shutdown, no final flush; the next start
   * recovers its logs), then waits until the process is gone. Throws when no broker runs.
   */
  async kill(): Promise<void> {
    const pid = this.pid();
    if (pid === undefined || !isBroker(pid)) throw new Error(`no broker runs from ${this.dataDir} to kill`);
    process.kill(pid, 'SIGKILL');
    for (let waited = 0; isBroker(pid); waited += 250) {
      if (waited >= 30_000) throw new Error(`broker pid ${pid} still runs 30 s after SIGKILL`);
      await sleep(250);
    }
  }

  /** Pid of the broker JVM, or undefined when it does not run. */
  pid(): number | undefined {
    try {
      const pid = Number(readFileSync(path.join(this.dataDir, 'kafka.pid'), 'utf8').trim());
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  private run(cmd: 'start' | 'stop'): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn('bash', [path.join(ROOT, 'tools/kafka/kafka.sh'), cmd], {
        env: { ...process.env, KAFKA_PORT: String(this.port), KAFKA_DATA_DIR: this.dataDir },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`kafka.sh ${cmd} failed (${code}): ${stderr}`));
      });
    });
  }
}
