import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, createTopics, order, randomName, readTopic, testBrokers, startIngest } from './support';

// Its own broker on other ports, so stopping it does not disturb the shared test broker.
const PORT = 19192;
const brokers = `127.0.0.1:${PORT}`;
const KAFKA_SH = path.resolve(__dirname, '../../../tools/kafka/kafka.sh');
const dataDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'ingest-outage-kafka-'));
const kafkaEnv = { ...process.env, KAFKA_PORT: String(PORT), KAFKA_CONTROLLER_PORT: String(PORT + 1), KAFKA_DATA_DIR: dataDir, KAFKA_HEAP: '384m' };
const kafka = (command: 'start' | 'stop') => promisify(execFile)('bash', [KAFKA_SH, command], { env: kafkaEnv, timeout: 150_000 });

const rawTopic = randomName('raw-outage');
let ingest: IngestRuntime;
let baseUrl = '';

beforeAll(async () => {
  testBrokers(); // the suite runs with the shared services; fail clearly if they are not configured
  await kafka('start');
  await createTopics(brokers, [rawTopic], 1);
  ({ ingest, url: baseUrl } = await startIngest(brokers, rawTopic, { INGEST_DELIVERY_TIMEOUT_MS: '4000', INGEST_PROBE_INTERVAL_MS: '300' }));
}, 180_000);

afterAll(async () => {
  await ingest?.close();
  await kafka('stop').catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

it('answers 503/429 while the broker is down, loses nothing it acknowledged, and recovers by itself', async () => {
  const acked = new Set<string>();
  const statuses = new Map<number, number>();
  let retryAfterSeen = true;
  let running = true;

  const client = async () => {
    while (running) {
      const events = Array.from({ length: 20 }, () => order());
      let status = 0;
      try {
        const res = await fetch(`${baseUrl}/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson' },
          body: events.map((e) => JSON.stringify(e)).join('\n'),
        });
        status = res.status;
        if (status === 503 || status === 429) retryAfterSeen &&= res.headers.get('retry-after') !== null;
        await res.arrayBuffer();
      } catch {
        status = -1;
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 200) for (const e of events) acked.add(e.event_id as string);
      else await new Promise((r) => setTimeout(r, 100));
    }
  };
  const clients = Array.from({ length: 4 }, client);

  await new Promise((r) => setTimeout(r, 1500));
  const ackedBeforeOutage = acked.size;
  expect(ackedBeforeOutage).toBeGreaterThan(0);

  const beforeOutage = new Map(statuses);
  await kafka('stop');
  await new Promise((r) => setTimeout(r, 6000));
  expect((await fetch(`${baseUrl}/readyz`)).status).toBe(503);

  await kafka('start');
  // Answers given while the broker was away (requests in flight time out after the delivery
  // timeout; new ones are refused at once once the probe has seen the outage).
  const refusedDuringOutage = (status: number) => (statuses.get(status) ?? 0) - (beforeOutage.get(status) ?? 0);
  const recoveredBy = Date.now() + 60_000;
  const ackedAtRestart = acked.size;
  while (acked.size < ackedAtRestart + 200 && Date.now() < recoveredBy) await new Promise((r) => setTimeout(r, 200));
  running = false;
  await Promise.all(clients);

  expect(refusedDuringOutage(503) + refusedDuringOutage(429)).toBeGreaterThan(0);
  expect(retryAfterSeen).toBe(true);
  expect(statuses.get(-1) ?? 0).toBe(0); // never a dropped connection, always an answer
  expect(acked.size).toBeGreaterThanOrEqual(ackedAtRestart + 200); // recovered without a restart
  expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);

  const records = await readTopic(brokers, rawTopic, acked.size, 60_000);
  const inKafka = new Set(records.map((r) => JSON.parse(r.value!.toString()).event_id as string));
  const lost = [...acked].filter((id) => !inKafka.has(id));
  expect(lost).toEqual([]);
}, 200_000);
