import http from 'node:http';
import { createTelemetry } from '@sluice/telemetry';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, createTopics, order, randomName, readTopic, testBrokers, startIngest } from './support';

const brokers = testBrokers();
const rawTopic = randomName('raw-bp');
const telemetry = createTelemetry({ service: 'ingest', logLevel: 'silent', traces: { kind: 'memory' } });
let ingest: IngestRuntime;
let baseUrl = '';

const ndjson = (events: Record<string, unknown>[]) => events.map((e) => JSON.stringify(e)).join('\n');
const headers = { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/x-ndjson' };

beforeAll(async () => {
  await createTopics(brokers, [rawTopic]);
  ({ ingest, url: baseUrl } = await startIngest(brokers, rawTopic, { INGEST_MAX_QUEUE_MESSAGES: '10', INGEST_MAX_INFLIGHT_BYTES: '1024' }, telemetry));
});

afterAll(async () => {
  await ingest?.close();
  await telemetry.shutdown();
});

it('429 with Retry-After when a request does not fit the producer queue, never a partial accept', async () => {
  const refused = Array.from({ length: 20 }, () => order());
  const res = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers, body: ndjson(refused) });
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INGEST_OVERLOADED');
  const fits = [order(), order()];
  const small = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers, body: ndjson(fits) });
  expect(small.status).toBe(200);
  // The topic holds the two accepted events and none of the twenty refused ones (this file's
  // first test: the topic was empty before it).
  const ids = (await readTopic(brokers, rawTopic, 2)).map((r) => (JSON.parse(r.value!.toString()) as { event_id: string }).event_id);
  expect(ids.sort()).toEqual(fits.map((e) => e.event_id as string).sort());
});

it('429 before reading the body when the in-flight byte budget is spent, and accepts again once it frees', async () => {
  // A: a chunked upload that stays open, holding the worst-case reservation (the body limit).
  let answerA: (v: { status: number; body: string }) => void = () => undefined;
  const doneA = new Promise<{ status: number; body: string }>((r) => (answerA = r));
  const a = http.request(`${baseUrl}/v1/events`, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
    let body = '';
    res.on('data', (c) => (body += c));
    res.on('end', () => answerA({ status: res.statusCode ?? 0, body }));
  });
  const eventA = order();
  a.write(JSON.stringify(eventA).slice(0, 10));
  const until = Date.now() + 10_000;
  while (ingest.budget.inUse === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  expect(ingest.budget.inUse).toBe(256 * 1024);

  const b = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers, body: ndjson([order()]) });
  expect(b.status).toBe(429);
  expect(b.headers.get('retry-after')).toBe('1');
  expect(((await b.json()) as { error: unknown }).error).toMatchObject({ code: 'INGEST_OVERLOADED', details: { limitBytes: 1024 } });

  a.end(JSON.stringify(eventA).slice(10));
  expect((await doneA).status).toBe(200);
  expect(ingest.budget.inUse).toBe(0);
  const again = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers, body: ndjson([order()]) });
  expect(again.status).toBe(200);
});

it('carries the caller trace into every record and counts events by outcome', async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const events = [order(), order(), order()];
  const res = await fetch(`${baseUrl}/v1/events`, {
    method: 'POST',
    // The client's tracestate is vendor data of its own: it must not ride on every record.
    headers: { ...headers, traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: `vendor=${'x'.repeat(400)}` },
    body: ndjson([...events, { bad: true }]),
  });
  expect(res.status).toBe(207);
  const records = await readTopic(brokers, rawTopic, 6);
  const mine = records.filter((r) => events.some((e) => r.value!.toString().includes(e.event_id as string)));
  expect(mine.length).toBe(3);
  for (const r of mine) expect(r.headers.traceparent?.toString()).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  for (const r of mine) expect(r.headers.tracestate).toBeUndefined();
  const text = await telemetry.metricsText();
  expect(text).toMatch(/sluice_ingest_events_in_total\{[^}]*outcome="accepted"[^}]*\} [1-9]/);
  expect(text).toMatch(/sluice_ingest_events_in_total\{[^}]*outcome="rejected"[^}]*\} [1-9]/);
  expect(text).toMatch(/sluice_ingest_events_in_total\{[^}]*outcome="throttled"[^}]*\} (1[0-9]|[2-9][0-9])/);
  // HTTP latency through telemetry's onResponse hook, by route pattern and status.
  expect(text).toMatch(/^sluice_ingest_http_request_duration_seconds_count\{(?=[^}]*method="POST")(?=[^}]*route="\/v1\/events")(?=[^}]*status="207")[^}]*\} [1-9]/m);
});
