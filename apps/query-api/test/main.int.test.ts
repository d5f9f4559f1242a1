// main.ts as a real process: configuration errors, serving, and a graceful SIGTERM that lets the
// in-flight request finish before the process exits 0.
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { freePort } from '@sluice/testing';
import { createOrders, orderRow, tempDir } from './support';

const ROOT = path.resolve(__dirname, '../../..');
const TOKEN = 'main-test-token-0123456789';

function run(env: Record<string, string>): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'apps/query-api/src/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TSX_TSCONFIG_PATH: path.join(ROOT, 'apps/query-api/tsconfig.json'), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (b) => (output += b));
  proc.stderr!.on('data', (b) => (output += b));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, output: () => output, exited };
}

describe('query-api main process', () => {
  it('refuses to start on bad configuration, listing every problem and no secret', async () => {
    const p = run({ QUERY_API_PORT: '99999', QUERY_API_TOKENS: '[{"name":"x","token":"short-secret","tables":["*"]}]', QUERY_API_MAX_ROWS: '0' });
    expect(await p.exited).toBe(1);
    const out = p.output();
    expect(out).toContain('QUERY_API_LAKE_ROOT is required');
    expect(out).toContain('QUERY_API_PORT must be ≤ 65535');
    expect(out).toContain('QUERY_API_MAX_ROWS must be ≥ 1');
    expect(out).toContain('QUERY_API_TOKENS entry 0 needs a token of 16 to 512 visible ASCII characters');
    expect(out).not.toContain('short-secret');
  }, 60_000);

  it('serves, then drains on SIGTERM: the in-flight request completes and the exit code is 0', async () => {
    const root = await tempDir('main');
    const table = await createOrders(root);
    await table.append({ rows: [orderRow(1)] });
    const port = await freePort();
    const opsPort = await freePort();
    const p = run({
      QUERY_API_LAKE_ROOT: root,
      QUERY_API_TABLES: 'silver_orders',
      QUERY_API_PORT: String(port),
      OPS_PORT: String(opsPort),
      QUERY_API_TOKENS: JSON.stringify([{ name: 'test', token: TOKEN, tables: ['*'] }]),
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      for (let i = 0; ; i++) {
        const ok = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
        if (ok) break;
        if (i > 300) throw new Error(`not ready after 60 s:\n${p.output()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      // /metrics on the ops port only: the API port is what dashboards reach through the load balancer.
      expect(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text()).toContain('# HELP sluice_query_api_');
      expect((await fetch(`${base}/metrics`)).status).toBe(404);
      const headers = { authorization: `Bearer ${TOKEN}` };
      const entity = await (await fetch(`${base}/v1/tables/silver_orders/entities/${orderRow(1).order_id}`, { headers })).json();
      expect(entity.entity.order_id).toBe(orderRow(1).order_id);

      // A read-your-writes wait that cannot be met is in flight when the signal arrives (1.5 s
      // after the request on a busy machine is still well inside its 5 s wait).
      const inflight = fetch(`${base}/v1/tables/silver_orders?waitVersion=99&waitTimeoutMs=5000`, { headers });
      await new Promise((r) => setTimeout(r, 1500));
      p.proc.kill('SIGTERM');
      const res = await inflight;
      expect(res.status).toBe(504);
      expect((await res.json()).error.code).toBe('QUERY_WAIT_TIMEOUT');
      const code = await p.exited;
      if (code !== 0) console.log(p.output());
      expect(code).toBe(0);
      expect(p.output()).toContain('query-api draining');
      await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    } finally {
      if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
    }
  }, 60_000);
});
