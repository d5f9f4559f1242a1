/**
 * A small continuous sample event stream into ingest, so the local stack shows live data.
 *
 *   npx tsx tools/src/sample/stream.ts --ingest http://127.0.0.1:8080 [--rate 50] [--seed 1]
 *
 * API key: env INGEST_API_KEY, else the demo key of tools/run-local.sh. Orders, inventory and
 * clickstream events from the generator (Zipf-popular entities, some out-of-order versions,
 * duplicates, tombstones, and a few invalid events ingest rejects), one NDJSON request per
 * second. Waits for ingest while it starts or is away; SIGTERM/SIGINT finish the request in
 * flight and exit 0.
 */
import { parseArgs } from 'node:util';
import { DEMO_API_KEY, sleep } from '../bench/stack';
import { EventStream } from '../generator';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      ingest: { type: 'string', default: 'http://127.0.0.1:8080' },
      rate: { type: 'string', default: '50' },
      seed: { type: 'string', default: String(Date.now() % 100_000) },
    },
    strict: true,
  });
  const rate = Number(values.rate);
  if (!Number.isFinite(rate) || rate <= 0) {
    process.stderr.write('--rate must be a positive number of events per second\n');
    return 2;
  }
  const key = process.env.INGEST_API_KEY || DEMO_API_KEY;
  const url = `${values.ingest.replace(/\/$/, '')}/v1/events`;
  const seed = Number(values.seed);
  const stream = new EventStream({ seed, runId: `sample${seed}`, clock: () => Date.now(), invalidRate: 0.005, entities: { orders: 5000, inventory: 2000, clickstream: 3000 } });
  const stop = new AbortController();
  process.on('SIGTERM', () => stop.abort());
  process.on('SIGINT', () => stop.abort());

  let accepted = 0;
  let rejected = 0;
  let lastReport = Date.now();
  let waiting = false;
  process.stderr.write(`[sample] sending ~${rate} events/s to ${url}\n`);
  while (!stop.signal.aborted) {
    const started = Date.now();
    const batch = stream.take(Math.max(1, Math.round(rate)));
    const body = batch.map((e) => e.body).join('\n') + '\n';
    // Resend the same batch until ingest takes it (it is down while starting or restarting).
    while (!stop.signal.aborted) {
      const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' }, body }).catch(() => undefined);
      if (r && (r.status === 200 || r.status === 207 || r.status === 422)) {
        const answer = (await r.json()) as { accepted?: number; rejected?: number };
        accepted += answer.accepted ?? 0;
        rejected += answer.rejected ?? 0;
        if (waiting) process.stderr.write('[sample] ingest answers again\n');
        waiting = false;
        break;
      }
      if (r && r.status !== 429 && r.status !== 503) {
        process.stderr.write(`[sample] ingest answered ${r.status}: ${(await r.text()).slice(0, 300)}; stopping\n`);
        return 1;
      }
      if (!waiting) process.stderr.write(`[sample] waiting for ingest (${r ? r.status : 'not reachable'})\n`);
      waiting = true;
      await sleep(1000);
    }
    if (Date.now() - lastReport >= 10_000) {
      process.stderr.write(`[sample] ${accepted} accepted, ${rejected} rejected so far\n`);
      lastReport = Date.now();
    }
    await sleep(Math.max(0, 1000 - (Date.now() - started)));
  }
  process.stderr.write(`[sample] stopped: ${accepted} accepted, ${rejected} rejected\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
