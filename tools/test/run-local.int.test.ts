// The README's first command, end to end: tools/run-local.sh starts Kafka, the four services and
// the sample stream, events reach the tables query-api serves, a second start beside it is
// refused, a service that dies is started again (later each time it dies again soon), so is
// Kafka, and `stop` from another shell stops it all.
// Own ports and directories, so a developer's stack in the same checkout is not touched.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@sluice/testing';

const root = join(__dirname, '..', '..');
const script = join(root, 'tools', 'run-local.sh');
const QUERY_TOKEN = 'demo-query-token-000000000000000';

function run(args: string[], env: NodeJS.ProcessEnv, timeout = 120_000): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('bash', [script, ...args], { cwd: root, env, timeout }, (err, stdout, stderr) => {
      const code = err ? Number((err as { code?: unknown }).code ?? 1) : 0;
      resolve({ code: Number.isFinite(code) ? code : 1, out: stdout + stderr });
    });
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** Whether `pid` leads its own process group yet (the script writes its pid before setsid runs). */
const leadsGroup = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pid;
  } catch {
    return false;
  }
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('tools/run-local.sh', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-run-local-'));
  const runDir = join(dir, 'run');
  let env: NodeJS.ProcessEnv;
  let stack: ChildProcess | undefined;

  beforeAll(async () => {
    const kafka = await freePort();
    const controller = await freePort();
    env = {
      ...process.env,
      KAFKA_PORT: String(kafka),
      KAFKA_CONTROLLER_PORT: String(controller),
      KAFKA_DATA_DIR: join(dir, 'kafka'),
      SLUICE_RUN_DIR: runDir,
      SLUICE_LAKE_DIR: join(dir, 'lake'),
      SLUICE_SCRATCH_DIR: join(dir, 'scratch'),
      INGEST_PORT: String(await freePort()),
      QUERY_API_PORT: String(await freePort()),
      VALIDATE_OPS_PORT: String(await freePort()),
      MERGE_OPS_PORT: String(await freePort()),
      INGEST_OPS_PORT: String(await freePort()),
      QUERY_API_OPS_PORT: String(await freePort()),
      SLUICE_READY_TIMEOUT_S: '240', // inside the test's wait for the banner, so the script's own message shows
    };
  });

  afterAll(async () => {
    await run(['stop'], env);
    if (stack?.pid !== undefined && alive(stack.pid)) process.kill(stack.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** Starts the stack in the background; its stderr is collected. */
  function launch(): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
    const proc = spawn('bash', [script], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let text = '';
    proc.stderr?.on('data', (d) => (text += String(d)));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    return { proc, output: () => text, exited };
  }

  it('runs the stack until stopped: of two starts at once one is refused, events reach query-api, a second start is refused, a dead service comes back', async () => {
    // Two starts at once: both used to pass the checks before either wrote its pid file.
    const launches = [launch(), launch()];
    const refused = await Promise.race(launches.map((l) => l.exited.then(() => l)));
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain('a Sluice stack is already running');
    const running = launches.find((l) => l !== refused) as ReturnType<typeof launch>;
    stack = running.proc;
    const exited = running.exited;
    const banner = until('the banner, printed once every service is ready', async () => (running.output().includes('Sluice is running') ? true : undefined), 300_000);
    const died = exited.then((code) => Promise.reject(new Error(`run-local.sh exited with ${code} before its banner`)));
    await Promise.race([banner, died]).catch((err) => {
      throw new Error(`${(err as Error).message}\n${running.output()}`);
    });
    died.catch(() => undefined); // it exits at the end of the test, after stop

    // The sample stream's orders go through ingest, validate and merge-compaction into silver.
    const rows = await until(
      'silver_orders rows through query-api',
      async () => {
        const res = await fetch(`http://127.0.0.1:${env.QUERY_API_PORT}/v1/tables/silver_orders/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${QUERY_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ aggregates: [{ fn: 'count', column: '*', as: 'n' }] }),
        });
        const body = (await res.json()) as { rows?: Array<{ n: number }> };
        return res.ok && (body.rows?.[0]?.n ?? 0) > 0 ? body.rows?.[0]?.n : undefined;
      },
      180_000,
    );
    expect(rows).toBeGreaterThan(0);

    const second = await run([], env, 30_000);
    expect(second.code).toBe(1);
    expect(second.out).toContain('a Sluice stack is already running');

    // A pid file read while it is rewritten is empty: Number('') is 0, and kill(-0) is this test's own group.
    const pidOf = (name: string) => {
      const pid = Number(readFileSync(join(runDir, `${name}.pid`), 'utf8').trim());
      if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${name}.pid holds no pid`);
      return pid;
    };
    const before = pidOf('validate');
    process.kill(-before, 'SIGKILL');
    const after = await until('validate started again', async () => {
      const pid = pidOf('validate');
      return pid !== before && alive(pid) && leadsGroup(pid) ? pid : undefined;
    }, 60_000);
    expect(running.output()).toContain('validate exited; starting it again');

    // Dying again soon after its start: it waits longer before the next (a crash loop is not
    // restarted every 5 s for ever).
    process.kill(-after, 'SIGKILL');
    const third = await until('validate started a third time', async () => {
      const pid = pidOf('validate');
      return pid !== after && alive(pid) && leadsGroup(pid) ? pid : undefined;
    }, 90_000);
    const waits = [...running.output().matchAll(/validate exited; starting it again in (\d+) s/g)].map((m) => Number(m[1]));
    expect(waits).toHaveLength(2);
    expect(waits[1]).toBeGreaterThan(waits[0]);

    // Kafka killed: started again, and ingest (ready only while it reaches Kafka) is ready again.
    const kafkaPidFile = join(env.KAFKA_DATA_DIR as string, 'kafka.pid');
    const kafkaBefore = Number(readFileSync(kafkaPidFile, 'utf8').trim());
    expect(kafkaBefore).toBeGreaterThan(0);
    process.kill(kafkaBefore, 'SIGKILL');
    await until('Kafka started again', async () => {
      const pid = Number(readFileSync(kafkaPidFile, 'utf8').trim());
      return pid > 0 && pid !== kafkaBefore && alive(pid) ? pid : undefined;
    }, 90_000);
    expect(running.output()).toContain('Kafka exited; starting it again');
    await until('ingest ready again', async () => ((await fetch(`http://127.0.0.1:${env.INGEST_OPS_PORT}/readyz`)).status === 200 ? true : undefined), 120_000);

    const pids = ['ingest', 'merge-compaction', 'query-api', 'sample-stream'].map(pidOf).concat(third, stack.pid as number);
    const stop = await run(['stop'], env);
    expect(stop.code).toBe(0);
    expect(await exited).toBe(0);
    await until('every process of the stack gone', async () => (pids.every((pid) => !alive(pid)) ? true : undefined), 60_000);
    expect(pids.filter(alive)).toEqual([]);
  }, 900_000);
});
