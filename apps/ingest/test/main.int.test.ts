// main.ts as a real process: on SIGTERM it stops taking requests, answers the one in flight
// (whose body is still arriving when the signal lands), flushes, and exits 0; the events it
// answered 200 for are in Kafka.
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { KEYS, createTopics, ingestEnv, order, randomName, readTopic, testBrokers } from './support';

const ROOT = path.resolve(__dirname, '../../..');
const brokers = testBrokers();

function run(env: Record<string, string>): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let output = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'apps/ingest/src/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TSX_TSCONFIG_PATH: path.join(ROOT, 'apps/ingest/tsconfig.json'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (b) => (output += b));
  proc.stderr!.on('data', (b) => (output += b));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, output: () => output, exited };
}

async function listening(p: ReturnType<typeof run>): Promise<{ address: string; opsPort: number }> {
  for (let i = 0; i < 300; i++) {
    const line = p.output().split('\n').find((l) => l.includes('"ingest listening"'));
    if (line) return JSON.parse(line) as { address: string; opsPort: number };
    if (p.proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`ingest did not listen within 60 s:\n${p.output()}`);
}

it('drains on SIGTERM: the request in flight is answered 200 and in Kafka, later ones are refused, the exit code is 0', async () => {
  const rawTopic = randomName('raw-main');
  await createTopics(brokers, [rawTopic]);
  const p = run(ingestEnv(brokers, rawTopic, { INGEST_PORT: '0', OPS_PORT: '0', LOG_LEVEL: 'info' }));
  try {
    const { address: base, opsPort } = await listening(p);
    for (let i = 0; !(await fetch(`${base}/readyz`).then((r) => r.ok, () => false)); i++) {
      if (i > 150) throw new Error(`not ready after 30 s:\n${p.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // /metrics on the ops port only: the API port is what producers reach through the load balancer.
    const ops = `http://127.0.0.1:${opsPort}`;
    expect(await (await fetch(`${ops}/metrics`)).text()).toContain('# HELP sluice_ingest_');
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    const events = Array.from({ length: 20 }, () => order());
    const lines = events.map((e) => `${JSON.stringify(e)}\n`);
    // The body goes in two parts; the signal lands between them.
    let sendRest!: () => void;
    const rest = new Promise<void>((resolve) => (sendRest = resolve));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(Buffer.from(lines.slice(0, 10).join('')));
        await rest;
        controller.enqueue(Buffer.from(lines.slice(10).join('')));
        controller.close();
      },
    });
    const inflight = fetch(`${base}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson' },
      body,
      duplex: 'half',
    } as RequestInit);
    await new Promise((r) => setTimeout(r, 500));
    p.proc.kill('SIGTERM');
    for (let i = 0; !p.output().includes('ingest draining'); i++) {
      if (i > 100) throw new Error(`no drain after SIGTERM:\n${p.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The ops port says so too (it answered 500 while the app was closing).
    expect((await fetch(`${ops}/readyz`)).status).toBe(503);
    // A new request after the signal is refused: 503 while draining, or no connection at all.
    const late = await fetch(`${base}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(order()),
    }).then((r) => r.status, () => -1);
    expect([503, -1]).toContain(late);
    sendRest();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: 20, rejected: 0 });
    const code = await p.exited;
    if (code !== 0) console.log(p.output());
    expect(code).toBe(0);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    const inKafka = new Set((await readTopic(brokers, rawTopic, events.length)).map((r) => JSON.parse(r.value!.toString()).event_id as string));
    expect(events.map((e) => e.event_id).filter((id) => !inKafka.has(id as string))).toEqual([]);
  } finally {
    if (p.proc.exitCode === null) p.proc.kill('SIGKILL');
  }
}, 90_000);
