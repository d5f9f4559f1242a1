// Open-loop HTTP load: `clients` keep-alive clients that together send `rate` requests per second
// on a fixed schedule, whatever the server does. A closed loop (autocannon's default: each client
// sends its next request when the last one answers) measures latency at saturation, where by
// Little's law p50 ≈ clients / throughput; dashboards poll on a timer instead. Each latency is
// taken from the request's scheduled time, not from when it could be sent, so a slow answer that
// holds a client back counts against every request it delayed (no coordinated omission).
import * as http from 'node:http';

export interface OpenLoopOptions {
  port: number;
  clients: number;
  /** Requests per second over all clients. */
  rate: number;
  durationS: number;
  headers: Record<string, string>;
  /** The i-th request of the run. */
  request(i: number): { method: 'GET' | 'POST'; path: string; body?: string };
}

export interface OpenLoopResult {
  rate: number;
  sent: number;
  /** Answers per second actually completed (below `rate` when the server could not keep up). */
  completedPerS: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  statusCodes: Record<string, number>;
  errors: number;
}

/** Runs the schedule, waits for the last answer (bounded by 30 s) and returns exact percentiles. */
export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const agents = Array.from({ length: o.clients }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const total = Math.max(1, Math.round(o.rate * o.durationS));
  const start = performance.now() + 50;
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / o.rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { method, path, body } = o.request(i);
    inflight.push(
      send(agents[i % o.clients], o.port, method, path, o.headers, body).then(
        (status) => {
          latencies.push(performance.now() - due);
          statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        },
        () => {
          errors++;
        },
      ),
    );
  }
  await Promise.race([Promise.all(inflight), new Promise((r) => setTimeout(r, 30_000))]);
  const elapsedS = (performance.now() - start) / 1000;
  for (const a of agents) a.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p: number) => round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN);
  return {
    rate: o.rate,
    sent: total,
    completedPerS: Math.round(latencies.length / elapsedS),
    p50: at(50),
    p95: at(95),
    p99: at(99),
    max: round(latencies[latencies.length - 1] ?? NaN),
    statusCodes,
    errors,
  };
}

function send(agent: http.Agent, port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
