import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@sluice/testing';

const script = join(__dirname, '..', 'kafka', 'kafka.sh');

function run(cmd: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('bash', [script, cmd], { env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as NodeJS.ErrnoException & { code?: number }).code as unknown as number) ?? 1 : 0;
      resolve({ code: typeof code === 'number' ? code : 1, out: stdout + stderr });
    });
  });
}

describe('tools/kafka/kafka.sh', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-kafka-tool-'));
  let env: Record<string, string>;

  beforeAll(async () => {
    // Two free ports, client and controller, below the ephemeral range: a CI run lost the
    // controller's port to another process's outgoing connection while the chaos suite ran beside
    // this test (see freePort).
    const port = await freePort();
    const controller = await freePort();
    env = { KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(controller), KAFKA_DATA_DIR: dataDir };
  });

  afterAll(async () => {
    await run('stop', env);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts once, answers metadata, does nothing on a second start, and stops by pid', async () => {
    const first = await run('start', env);
    expect(first.out).toContain(`ready: bootstrap 127.0.0.1:${env.KAFKA_PORT}`);
    expect(first.code).toBe(0);
    const pid = readFileSync(join(dataDir, 'kafka.pid'), 'utf8').trim();

    const second = await run('start', env);
    expect(second.code).toBe(0);
    expect(second.out).toContain(`already running (pid ${pid})`);

    expect((await run('status', env)).code).toBe(0);
    const stop = await run('stop', env);
    expect(stop.out).toContain(`stopping pid ${pid}`);
    expect(() => process.kill(Number(pid), 0)).toThrow();
    expect((await run('status', env)).code).toBe(3);
  });

  it('names a stale pid file and clears it', async () => {
    writeFileSync(join(dataDir, 'kafka.pid'), '999999\n');
    const res = await run('stop', env);
    expect(res.out).toContain('stale pid file');
    expect(res.code).toBe(0);
  });

  it('refuses a port that another process holds, with a clear message', async () => {
    let blocker: Server | undefined;
    await new Promise<void>((resolve) => {
      blocker = createServer().listen(Number(env.KAFKA_PORT), '127.0.0.1', () => resolve());
    });
    try {
      const res = await run('start', env);
      expect(res.code).not.toBe(0);
      expect(res.out).toContain(`port 127.0.0.1:${env.KAFKA_PORT} is already taken`);
    } finally {
      await new Promise((resolve) => blocker?.close(resolve));
    }
  });
});
