import { execFile, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CONTRACTS, HEADERS, MAX_DLQ_RECORD_BYTES } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import { isS3Root } from '@sluice/lake';
import { readdirSync } from 'node:fs';
import { DEMO_API_KEY, ROOT, sleep, type OwnBroker, type Stack } from '../bench/stack';
import { DLQ_HEADERS } from '../dlq/dlq-record';
import { readDlq } from '../dlq/read-dlq';
import type { Rng } from '../generator';
import { openTable, type LakeLocation } from './audit';
import { poisonCorpus } from './poison';
import type { FaultyS3Proxy, S3Faults } from './s3-proxy';

/** What a scenario's fault step can use while the load runs. */
export interface FaultContext {
  readonly stack: Stack;
  readonly broker?: OwnBroker;
  /** The mount point holding the lake, for storage scenarios. */
  readonly mount?: LakeMount;
  /** The fault proxy between the services and the S3 lake, for S3 scenarios. */
  readonly s3Proxy?: FaultyS3Proxy;
  readonly rng: Rng;
  readonly runId: string;
  /** When the load ends, epoch ms; faults stop by then. */
  readonly loadEndsAt: number;
  readonly log: (line: string) => void;
  /** Adds a line to the scenario's record of injected faults. */
  readonly fault: (line: string) => void;
  /** Faults recorded so far in this run. */
  readonly faultCount: () => number;
  /** Counts poison records produced to raw that carry no event_id. */
  poisonWithoutId: number;
  /** Poison records produced to raw with an event_id: each must be dead-lettered once (any reason). */
  readonly poisonIds: Map<string, string>;
  /** Every poison record produced straight to raw, by `topic/partition/offset`: its name and whether its DLQ copy must be cut. */
  readonly poisonSources: Map<string, PoisonSource>;
  /** DLQ records the DLQ tool replayed to raw: each must come back to the DLQ once, as a failed replay. */
  replaysSent: number;
  /** Findings that fail the scenario independently of the audit (a crash on poison, a corrupt table). */
  readonly problems: string[];
}

/** A poison record produced to raw, as the audit expects to find it in the DLQ. */
export interface PoisonSource {
  readonly name: string;
  /** Larger than a DLQ record may be: its DLQ copy must carry `sluice-dlq-truncated`. */
  readonly cut: boolean;
}

/** A fault-injection scenario: the faults it injects while load runs; the audit follows. */
export interface Scenario {
  readonly name: string;
  readonly what: string;
  /** Needs a private broker (stops it). */
  readonly ownBroker?: boolean;
  /** Needs the lake on its own tmpfs mount (root, `mount` allowed). */
  readonly mount?: { sizeMb: number };
  /** Needs the lake on S3 behind a fault proxy (ChaosOptions.s3). */
  readonly s3?: boolean;
  readonly inject: (ctx: FaultContext) => Promise<void>;
}

/** A tmpfs mounted for the lake, resized or made read-only to fake a full or failing disk. */
export class LakeMount {
  constructor(
    readonly dir: string,
    private sizeMb: number,
  ) {}

  /** Mounts a tmpfs of `sizeMb` at `dir`. Throws a clear error where `mount` is not allowed. */
  mount(): void {
    run('mount', ['-t', 'tmpfs', '-o', `size=${this.sizeMb}m`, 'tmpfs', this.dir]);
  }

  /** Changes the size (shrinking below the used bytes makes the disk full at once). */
  resize(sizeMb: number): void {
    this.sizeMb = sizeMb;
    run('mount', ['-o', `remount,size=${sizeMb}m`, this.dir]);
  }

  /**
   * Read-only (every write fails with EROFS) or back to read-write. The kernel refuses a
   * read-only remount ("mount point is busy") while a file on it is open for writing, as a
   * Parquet file is for the few milliseconds merge-compaction spends writing it; so that case is
   * retried every 50 ms for up to `busyForMs`. Returns how many attempts it took.
   */
  async readOnly(on: boolean, busyForMs = 10_000): Promise<number> {
    const giveUpAt = Date.now() + busyForMs;
    return (await this.remount(() => (on ? 'ro' : 'rw'), /busy/i, () => Date.now() < giveUpAt)).attempts;
  }

  /**
   * Shrinks the mount to what is used plus `headroomMb`: the disk is full once that is written.
   * The lake may grow between measuring and remounting, and the kernel refuses a tmpfs smaller
   * than its contents ("bad option"); so that refusal is retried with a fresh measure, up to
   * `attempts` times. Returns the size set. `measure` is the used MB (tests pass a stale one).
   */
  async fill(headroomMb: number, attempts = 5, measure: () => number = () => this.usedMb()): Promise<{ sizeMb: number; attempts: number }> {
    let sizeMb = this.sizeMb;
    const done = await this.remount(() => `size=${(sizeMb = measure() + headroomMb)}m`, /bad option|invalid argument/i, (attempt) => attempt < attempts);
    this.sizeMb = sizeMb;
    return { sizeMb, attempts: done.attempts };
  }

  /**
   * `mount -o remount,<option()>` until it succeeds; a refusal matching `retryOn` is tried again
   * (with `option()` asked anew) after 50 ms while `again(attempts so far)` holds, anything else
   * throws CHAOS_MOUNT_FAILED with the attempts made.
   */
  private async remount(option: () => string, retryOn: RegExp, again: (attempts: number) => boolean): Promise<{ attempts: number }> {
    for (let attempt = 1; ; attempt++) {
      const args = ['-o', `remount,${option()}`, this.dir];
      const r = spawnSync('mount', args, { encoding: 'utf8' });
      if (r.status === 0) return { attempts: attempt };
      if (!retryOn.test(r.stderr) || !again(attempt)) throw mountFailed('mount', args, r.stderr, r.status, attempt);
      await sleep(50);
    }
  }

  /** Used MB (rounded up, as df reports them). */
  usedMb(): number {
    const r = spawnSync('df', ['-m', '--output=used', this.dir], { encoding: 'utf8' });
    return Number(r.stdout.trim().split('\n').pop());
  }

  unmount(): void {
    spawnSync('umount', ['-l', this.dir]);
  }
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw mountFailed(cmd, args, r.stderr, r.status, 1);
}

function mountFailed(cmd: string, args: string[], stderr: string, status: number | null, attempts: number): Error {
  const tries = attempts > 1 ? ` (${attempts} attempts)` : '';
  return new Error(`CHAOS_MOUNT_FAILED: ${cmd} ${args.join(' ')}${tries}: ${stderr.trim() || `exit ${status}`}`);
}

/** Sleeps until `ms` elapsed or the load ended; false when the load ended. */
async function pause(ctx: FaultContext, ms: number): Promise<boolean> {
  const left = ctx.loadEndsAt - Date.now();
  await sleep(Math.max(0, Math.min(ms, left)));
  return Date.now() < ctx.loadEndsAt;
}

/** Sets the proxy's faults for `ms`, then clears them; returns how much `stat` grew meanwhile. */
async function proxyFaultsFor(proxy: FaultyS3Proxy, faults: Partial<S3Faults>, ms: number, stat: keyof FaultyS3Proxy['stats']): Promise<number> {
  const before = proxy.stats[stat];
  proxy.set(faults);
  await sleep(ms);
  proxy.set({});
  return proxy.stats[stat] - before;
}

/**
 * Every table of the lake opens and loads its snapshot (no corrupt log). A local lake lists its
 * directories; an S3 one is checked by the names the contracts declare.
 */
export async function checkTablesOpen(lake: LakeLocation): Promise<string[]> {
  const problems: string[] = [];
  const s3 = isS3Root(lake.root);
  const names = s3
    ? Object.values(CONTRACTS).flatMap((c) => [c.tables.bronze, c.tables.silver, ...c.aggregates.map((g) => g.table)])
    : readdirSync(lake.root).filter((name) => !name.startsWith('.') && name !== 'lost+found');
  for (const name of names) {
    try {
      const t = await openTable(lake, name);
      // Every contract got events, so its bronze and silver must exist.
      if (t === undefined && s3 && /^(bronze|silver)_/.test(name)) problems.push(`table ${name} is missing`);
      await t?.snapshot();
    } catch (err) {
      problems.push(`table ${name} does not open: ${(err as Error).message}`);
    }
  }
  return problems;
}

const KILLABLE = ['ingest', 'validate', 'merge-compaction', 'query-api'] as const;

/** The scenarios by name. */
export const SCENARIOS: Record<string, Scenario> = {
  kill: {
    name: 'kill',
    what: 'SIGKILL a random service at a random moment (every 2–6 s) for the whole load; the supervisor restarts it',
    async inject(ctx) {
      while (await pause(ctx, 2000 + ctx.rng.int(4000))) {
        const id = ctx.rng.pick(KILLABLE);
        const p = ctx.stack.get(id);
        if (p.pid === 0) continue; // still restarting from the previous kill
        ctx.fault(`SIGKILL ${id}`);
        ctx.stack.kill(id, 'SIGKILL');
      }
    },
  },

  'kill-each': {
    name: 'kill-each',
    what: 'SIGKILL each service once, in random order, 2–4 s apart (bounded: the CI version of kill)',
    async inject(ctx) {
      // Every service is killed even past the load's nominal end: the CI test counts on exactly
      // one kill per service, whatever the machine's speed, and the load goes on until the last
      // fault's effects are over (run.ts, FAULT_TAIL_MS).
      const order = [...KILLABLE].sort(() => ctx.rng.next() - 0.5);
      for (const id of order) {
        await sleep(2000 + ctx.rng.int(2000));
        ctx.fault(`SIGKILL ${id}`);
        ctx.stack.kill(id, 'SIGKILL');
        await ctx.stack.waitReady(ctx.stack.get(id), 120_000);
      }
    },
  },

  broker: {
    name: 'broker',
    what: 'the (private) broker down for 10–20 s during load, then started again; twice: first crashed (SIGKILL), then stopped (SIGTERM)',
    ownBroker: true,
    async inject(ctx) {
      const broker = ctx.broker!;
      // The crash first: a short run (the CI version) may end before the second round.
      for (const how of ['SIGKILL', 'SIGTERM'] as const) {
        if (!(await pause(ctx, 5000 + ctx.rng.int(5000)))) return;
        const down = 10_000 + ctx.rng.int(10_000);
        ctx.fault(`broker stopped by ${how} for ${down} ms`);
        await (how === 'SIGKILL' ? broker.kill() : broker.stop());
        ctx.log('broker process gone');
        await sleep(down);
        ctx.log('starting the broker again');
        const tries = await broker.start();
        ctx.fault(`broker started${tries > 1 ? ` (start-up failed ${tries - 1}× first; retried)` : ''}`);
      }
    },
  },

  'storage-fail': {
    name: 'storage-fail',
    what: 'lake filesystem read-only (every write fails with EROFS) for 15 s, twice',
    mount: { sizeMb: 2048 },
    async inject(ctx) {
      // A round the load has no room for is skipped; the check below runs either way.
      for (let round = 0; round < 2; round++) {
        if (!(await pause(ctx, 5000 + ctx.rng.int(5000)))) break;
        const attempts = await ctx.mount!.readOnly(true);
        ctx.fault(`lake read-only for 15 s${attempts > 1 ? ` (the remount was refused as busy ${attempts - 1}× first; retried)` : ''}`);
        await sleep(15_000);
        await ctx.mount!.readOnly(false);
        ctx.fault('lake writable again');
      }
      // The fault must have been felt: merge-compaction saw the failing writes (and survived them).
      const felt = (ctx.stack.logText('merge-compaction').match(/EROFS|read-only file system/gi) ?? []).length;
      ctx.fault(`merge-compaction logged ${felt} read-only-filesystem errors`);
      if (felt === 0) ctx.problems.push('merge-compaction logged no EROFS error while the lake was read-only: the fault had no effect');
    },
  },

  'storage-slow': {
    name: 'storage-slow',
    what: 'slow writer: merge-compaction frozen (SIGSTOP) 400 ms of every 500 ms for 20 s — every lake operation takes 5× longer (no storage-latency option exists in the service)',
    async inject(ctx) {
      if (!(await pause(ctx, 5000))) return;
      ctx.fault('merge-compaction at 20% speed for 20 s');
      const until = Date.now() + 20_000;
      while (Date.now() < until) {
        const pid = ctx.stack.get('merge-compaction').pid;
        if (pid > 0) process.kill(pid, 'SIGSTOP');
        await sleep(400);
        if (pid > 0) process.kill(pid, 'SIGCONT');
        await sleep(100);
      }
      ctx.fault('merge-compaction at full speed');
    },
  },

  's3-slow': {
    name: 's3-slow',
    what: 'lake on S3 (SeaweedFS) behind a proxy that delays every request by 300 ms for 20 s',
    s3: true,
    async inject(ctx) {
      const proxy = ctx.s3Proxy as FaultyS3Proxy;
      if (!(await pause(ctx, 5000))) return;
      ctx.fault('S3 requests delayed by 300 ms for 20 s');
      const delayed = await proxyFaultsFor(proxy, { delayMs: 300 }, 20_000, 'delayed');
      ctx.fault(`S3 at full speed again; ${delayed} requests were delayed`);
      if (delayed === 0) ctx.problems.push('no S3 request passed the proxy while it delayed them: the fault had no effect');
    },
  },

  's3-fail': {
    name: 's3-fail',
    what: 'lake on S3 (SeaweedFS) behind a proxy that refuses every request with 503 SlowDown for 15 s, twice',
    s3: true,
    async inject(ctx) {
      const proxy = ctx.s3Proxy as FaultyS3Proxy;
      // Only what merge-compaction logs from now on counts (an earlier scenario may have caused SlowDowns too).
      const logBefore = ctx.stack.logText('merge-compaction').length;
      // A round the load has no room for is skipped; the check below runs either way.
      for (let round = 0; round < 2; round++) {
        if (!(await pause(ctx, 5000 + ctx.rng.int(5000)))) break;
        ctx.fault('S3 refuses every request (503 SlowDown) for 15 s');
        await proxyFaultsFor(proxy, { failRatio: 1 }, 15_000, 'failed');
        ctx.fault(`S3 answers again; ${proxy.stats.failed} requests refused so far`);
      }
      // The fault must have been felt: merge-compaction saw the refusals (and survived them).
      const felt = (ctx.stack.logText('merge-compaction').slice(logBefore).match(/SlowDown|reduce your request rate/g) ?? []).length;
      ctx.fault(`merge-compaction logged ${felt} SlowDown errors`);
      if (felt === 0) ctx.problems.push('merge-compaction logged no SlowDown error while S3 refused every request: the fault had no effect');
    },
  },

  's3-lost-answers': {
    name: 's3-lost-answers',
    what: 'lake on S3 (SeaweedFS) behind a proxy that carries out 30 % of the requests and then answers 503 SlowDown anyway, for 20 s: writes land but their answers are lost',
    s3: true,
    async inject(ctx) {
      const proxy = ctx.s3Proxy as FaultyS3Proxy;
      if (!(await pause(ctx, 5000))) return;
      ctx.fault('S3 answers lost for 30 % of the requests, and for the first 3 table commits that land, for 20 s');
      const lostCommitsBefore = proxy.stats.lostCommits;
      const commitsBefore = proxy.stats.commits;
      const lost = await proxyFaultsFor(proxy, { loseRatio: 0.3, loseCommits: 3 }, 20_000, 'lost');
      const lostCommits = proxy.stats.lostCommits - lostCommitsBefore;
      const commits = proxy.stats.commits - commitsBefore;
      ctx.fault(`S3 answers again; ${lost} requests were carried out with their answer lost, ${lostCommits} of them table commits (of ${commits} commit attempts)`);
      if (lost === 0) ctx.problems.push('no S3 request lost its answer: the fault had no effect');
      else if (lostCommits === 0) ctx.problems.push(`no table commit lost its answer (${commits} commit attempts in the window, none landed): the case this fault is for was not met`);
    },
  },

  'disk-full': {
    name: 'disk-full',
    what: 'lake on a tmpfs shrunk to what is used + 2 MB (disk full) for 20 s, then grown back',
    mount: { sizeMb: 2048 },
    async inject(ctx) {
      if (!(await pause(ctx, 8000))) return;
      const full = await ctx.mount!.fill(2);
      ctx.fault(`lake filesystem shrunk to ${full.sizeMb} MB (full)${full.attempts > 1 ? ` after ${full.attempts} attempts (it grew meanwhile)` : ''}`);
      await sleep(20_000);
      // While full: the tables must still open (a failed write never leaves a torn commit).
      ctx.problems.push(...(await checkTablesOpen({ root: ctx.stack.lakeRoot })));
      const logs = ctx.stack.logText('merge-compaction');
      if (!/ENOSPC|no space/i.test(logs)) ctx.problems.push('merge-compaction logged no ENOSPC / "no space" error while the disk was full');
      ctx.mount!.resize(2048);
      ctx.fault('lake filesystem back to 2048 MB');
    },
  },

  poison: {
    name: 'poison',
    what: 'the hostile corpus through HTTP (each must get a 4xx, never a 5xx or 2xx) and straight into raw (each must reach the DLQ; nothing crashes)',
    async inject(ctx) {
      const restartsBefore = new Map([...ctx.stack.procs.values()].map((p) => [p.id, p.restarts]));
      const corpus = poisonCorpus(`${ctx.runId}h`);
      for (const p of corpus) {
        const r = await fetch(`${ctx.stack.ingestUrl}/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${DEMO_API_KEY}`, 'content-type': 'application/json' },
          body: p.bytes,
          // A request that hangs is a finding, not a reason to hold the run (undici waits 300 s).
          signal: AbortSignal.timeout(30_000),
        }).catch((err: Error) => ({ status: 0, text: async () => err.message }));
        const text = (await r.text()).slice(0, 200);
        if (r.status < 400 || r.status >= 500) ctx.problems.push(`HTTP poison "${p.name}": status ${r.status} ${text}`);
        else if (!/"code"\s*:\s*"[A-Z_]+"/.test(text)) ctx.problems.push(`HTTP poison "${p.name}": ${r.status} without a reason code: ${text}`);
      }
      ctx.fault(`${corpus.length} hostile HTTP requests`);
      const producer = new KafkaProducer({ brokers: ctx.stack.options.brokers, clientId: 'sluice-chaos-poison' });
      await producer.connect();
      try {
        const raw = poisonCorpus(`${ctx.runId}r`);
        const reports = await producer.sendBatch(raw.map((p) => ({ topic: ctx.stack.topics.raw, key: p.id ?? p.name, value: p.bytes, headers: { [HEADERS.producer]: 'chaos-poison' } })));
        // A record without a value (a Kafka tombstone) too.
        const tombstone = await producer.send({ topic: ctx.stack.topics.raw, key: 'null-value', value: null });
        // Each must be dead-lettered exactly once; a record too large for the DLQ arrives cut and marked.
        reports.forEach((r, i) => ctx.poisonSources.set(`${r.topic}/${r.partition}/${r.offset}`, { name: raw[i].name, cut: raw[i].bytes.length > MAX_DLQ_RECORD_BYTES }));
        ctx.poisonSources.set(`${tombstone.topic}/${tombstone.partition}/${tombstone.offset}`, { name: 'null value', cut: false });
        ctx.poisonWithoutId += raw.filter((p) => !p.id).length + 1;
        for (const p of raw) if (p.id) ctx.poisonIds.set(p.id, p.name);
        ctx.fault(`${raw.length + 1} hostile records produced to raw`);
      } finally {
        await producer.close();
      }
      // Give validate time to route them, then: poison must never crash (restart) a service.
      await pause(ctx, 5000);
      for (const p of ctx.stack.procs.values()) {
        const before = restartsBefore.get(p.id) ?? 0;
        if (p.restarts > before || p.pid === 0) ctx.problems.push(`${p.id} crashed on poison input (restarts ${before} → ${p.restarts})`);
      }
    },
  },

  replay: {
    name: 'replay',
    what: 'replay the whole DLQ to raw with the DLQ tool as an operator would (the events are still invalid: each must come back to the DLQ once, marked as a failed replay), validate frozen meanwhile and SIGKILLed 0–400 ms after it resumes',
    async inject(ctx) {
      if (!(await pause(ctx, 6000 + ctx.rng.int(3000)))) return;
      // Replays of poison records without an event_id would change the count the audit expects of them.
      if (ctx.poisonSources.size > 0) {
        ctx.problems.push('replay: run it before poison (a replay of the poison records would change what the audit expects of them)');
        return;
      }
      // Frozen, validate adds nothing to the DLQ: the tool replays exactly what is read here, and
      // the replayed records wait in raw until it resumes.
      // Frozen by its own pid, taken once it answers: while the supervisor restarts it the pid is 0,
      // and a SIGSTOP to pid 0 stops this whole process group (the runner and every service) for good.
      await ctx.stack.waitReady(ctx.stack.get('validate'), 120_000);
      const pid = ctx.stack.get('validate').pid;
      if (!(pid > 0)) {
        ctx.problems.push('replay: validate has no process to freeze');
        return;
      }
      process.kill(pid, 'SIGSTOP');
      const frozenAt = Date.now();
      let resumed = false;
      try {
        const dlq = await readDlq(ctx.stack.options.brokers, ctx.stack.topics.dlq, 60_000);
        const notFromRaw = dlq.filter((m) => m.headers[DLQ_HEADERS.sourceTopic]?.toString('utf8') !== ctx.stack.topics.raw).length;
        if (notFromRaw > 0) ctx.problems.push(`replay: ${notFromRaw} DLQ records are not validate's (merge-compaction's own dead letters are valid events: replayed, they do not come back)`);
        const replayable = dlq.filter((m) => m.headers[DLQ_HEADERS.truncated] === undefined).length;
        const { replayed } = await dlqTool(ctx.stack, ['replay', '--all']);
        if (replayed !== replayable || replayed === 0) {
          ctx.problems.push(`replay: the DLQ tool replayed ${String(replayed)} records of the ${replayable} replayable ones the DLQ held (the load's invalid events should have been there)`);
        }
        ctx.replaysSent += replayed > 0 ? replayed : 0;
        // How long it was frozen: past its session timeout the group evicted it, and it rejoins before it routes anything.
        ctx.fault(`DLQ tool replayed ${replayed} records to raw while validate was frozen (${Date.now() - frozenAt} ms)`);
        process.kill(pid, 'SIGCONT');
        resumed = true;
        const after = ctx.rng.int(400);
        await sleep(after);
        ctx.fault(`SIGKILL validate ${after} ms after it resumed with the replayed records waiting in raw`);
        ctx.stack.kill('validate', 'SIGKILL');
      } finally {
        if (!resumed) process.kill(pid, 'SIGCONT');
      }
      await ctx.stack.waitReady(ctx.stack.get('validate'), 120_000);
    },
  },

  scale: {
    name: 'scale',
    what: 'scale validate 1 → 3 → 1 and add/remove a tier-1-only merge-compaction instance during load (rebalances)',
    // Every step runs, with its full pause, whatever the machine's speed: the load goes on until
    // the last step's rebalance is over (run.ts, FAULT_TAIL_MS), so each one meets load.
    async inject(ctx) {
      await sleep(4000);
      await Promise.all([ctx.stack.start('validate', 1), ctx.stack.start('validate', 2)]);
      ctx.fault('validate scaled to 3');
      await sleep(5000);
      await ctx.stack.start('merge-compaction', 1, 120_000, { SLUICE_ROLES: 'tier1' });
      ctx.fault('merge-compaction tier-1 instance added');
      await sleep(6000);
      await ctx.stack.stop('validate-2');
      await ctx.stack.stop('merge-compaction-1');
      ctx.fault('validate scaled to 2, merge-compaction back to 1');
      await sleep(5000);
      await ctx.stack.stop('validate-1');
      ctx.fault('validate scaled to 1');
    },
  },
};

/** Runs the DLQ tool (tools/src/dlq/cli.ts) on the stack's topics, as an operator would; its JSON answer. */
async function dlqTool(stack: Stack, args: readonly string[]): Promise<{ replayed: number }> {
  const cli = [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), '--tsconfig', path.join(ROOT, 'tsconfig.base.json'), path.join(ROOT, 'tools/src/dlq/cli.ts')];
  const topics = ['--brokers', stack.options.brokers, '--dlq-topic', stack.topics.dlq, '--raw-topic', stack.topics.raw];
  const { stdout } = await promisify(execFile)(process.execPath, [...cli, ...args, ...topics], { cwd: ROOT, timeout: 120_000 });
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { replayed: number };
}
