import http from 'node:http';
import { createTelemetry } from '@sluice/telemetry';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, createTopics, order, randomName, testBrokers, startIngest } from './support';

const brokers = testBrokers();
const rawTopic = randomName('raw-slow');
const telemetry = createTelemetry({ service: 'ingest', logLevel: 'silent' });
let ingest: IngestRuntime;
let baseUrl = '';

beforeAll(async () => {
  await createTopics(brokers, [rawTopic]);
  ({ ingest, url: baseUrl } = await startIngest(brokers, rawTopic, { INGEST_REQUEST_TIMEOUT_MS: '1000', INGEST_MAX_INFLIGHT_BYTES: '1024' }, telemetry));
});

afterAll(async () => {
  await ingest?.close();
  await telemetry.shutdown();
});

// fastify turns Node's request timeout off by default, so a client trickling its body in held
// the in-flight reservation for ever; a few of them shut every producer out with 429.
it('ends a request whose body does not arrive in time (408) and gives its budget back', async () => {
  const answered = new Promise<number>((resolve, reject) => {
    const slow = http.request(`${baseUrl}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson', 'transfer-encoding': 'chunked' },
    });
    slow.on('response', (res) => resolve(res.statusCode ?? 0));
    slow.on('error', reject);
    slow.write(JSON.stringify(order()).slice(0, 10)); // and nothing more
  });
  const deadline = Date.now() + 10_000;
  while (ingest.budget.inUse === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  expect(ingest.budget.inUse).toBeGreaterThan(0);
  const started = Date.now();
  expect(await answered).toBe(408);
  expect(Date.now() - started).toBeLessThan(8_000);
  while (ingest.budget.inUse > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  expect(ingest.budget.inUse).toBe(0);
  const next = await fetch(`${baseUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson' },
    body: JSON.stringify(order()),
  });
  expect(next.status).toBe(200);
});
