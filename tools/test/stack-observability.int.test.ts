import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CONTRACTS, sampleClickJson, sampleOrderJson } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import { parseExposition, type Sample, type ServiceId, type SpanRecord } from '@sluice/telemetry';
import { DEMO_API_KEY, DEMO_QUERY_TOKEN, ROOT, Stack, type ServiceName, waitUntil } from '../src/bench/stack';
import { checkRunningServices } from '../src/deploy/metric-refs';
import { testBrokers } from './support/env';

// The four real services as child processes against the test broker, every one exporting spans
// to its own JSON-lines file: their /metrics must match the catalog and the alert/dashboard
// expressions, the core counters must equal what was sent, and one event's spans must form a
// single ingest → validate → merge-compaction chain (Sluice issue 8).

const SERVICES: readonly ServiceName[] = ['ingest', 'validate', 'merge-compaction', 'query-api'];
const ORDERS = 200;
const CLICKS = 100;
const BATCH = 50;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('the running stack: metrics and one trace across services', () => {
  const kafka = testBrokers();
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? tmpdir(), 'sluice-obs-'));
  const spanFile = (s: ServiceName) => path.join(workDir, 'spans', `${s}.jsonl`);
  const traceEnv = (s: ServiceName) => ({ TRACES_EXPORTER: 'jsonl', TRACES_FILE: spanFile(s), TRACES_SAMPLE_RATIO: '1', LOG_LEVEL: 'warn' });
  const stack = new Stack({
    brokers: kafka,
    workDir,
    prefix: `obs-${hex(4)}.`,
    supervise: false,
    env: {
      ingest: traceEnv('ingest'),
      validate: traceEnv('validate'),
      // Short batches and folds keep the test well inside its time bound.
      'merge-compaction': { ...traceEnv('merge-compaction'), SLUICE_BATCH_MAX_MS: '300', SLUICE_MERGE_INTERVAL_MS: '500' },
      'query-api': traceEnv('query-api'),
    },
  });
  const producer = new KafkaProducer({ brokers: kafka, clientId: `obs-${hex(3)}` });

  // A trace this test starts itself, so the chain can be checked from a known root.
  const callerTrace = hex(16);
  const callerSpan = hex(8);
  // A sampled parent on a record validate must dead-letter: its span is outcome=dlq.
  const dlqTrace = hex(16);
  const dlqParent = hex(8);
  const invalid: Array<{ value: string; headers?: Record<string, string> }> = [
    { value: 'not json at all' },
    { value: '{}' },
    { value: JSON.stringify({ contract: 'no-such-contract', event_id: 'x' }) },
    { value: JSON.stringify({ ...sampleOrderJson(1), contract: 'orders', order_id: 42 }), headers: { traceparent: `00-${dlqTrace}-${dlqParent}-01` } },
    // Sampled flag on a malformed header: passed through, no span, no new root.
    { value: '[1,2,3]', headers: { traceparent: `00-${hex(16).toUpperCase()}-${hex(8)}-01` } },
    // Unsampled: no span.
    { value: '"just a string"', headers: { traceparent: `00-${hex(16)}-${hex(8)}-00` } },
  ];
  let accepted = 0;

  beforeAll(async () => {
    await stack.createTopics();
    // Four cold starts at once on a shared 2-core machine.
    await stack.startAll(150_000);
    await producer.connect();
  }, 180_000);

  afterAll(async () => {
    await producer.close().catch(() => undefined);
    await stack.close();
    rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  async function post(lines: Record<string, unknown>[], headers: Record<string, string> = {}): Promise<number> {
    const r = await fetch(`${stack.ingestUrl}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${DEMO_API_KEY}`, 'content-type': 'application/x-ndjson', ...headers },
      body: lines.map((l) => JSON.stringify(l)).join('\n') + '\n',
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    // Anything but a full accept would make the exact counts below meaningless: fail loudly.
    if (r.status !== 200) throw new Error(`ingest answered ${r.status}: ${text.slice(0, 300)}`);
    return (JSON.parse(text) as { accepted: number }).accepted;
  }

  async function scrape(s: ServiceName): Promise<Sample[]> {
    const r = await fetch(`http://127.0.0.1:${stack.get(s).opsPort}/metrics`, { signal: AbortSignal.timeout(5000) });
    if (!r.ok) throw new Error(`${s} /metrics answered ${r.status}`);
    const parsed = parseExposition(await r.text());
    expect(parsed.problems).toEqual([]);
    return [...parsed.samples];
  }

  const sum = (samples: readonly Sample[], name: string, labels: Record<string, string> = {}) =>
    samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((t, x) => t + x.value, 0);

  async function silverOrders(): Promise<number> {
    const r = await fetch(`${stack.queryUrl}/v1/tables/${CONTRACTS.orders.tables.silver}/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${DEMO_QUERY_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ aggregates: [{ fn: 'count', column: '*', as: 'n' }] }),
      signal: AbortSignal.timeout(5000),
    });
    if (r.status !== 200) return 0;
    const body = (await r.json()) as { columns: Array<string | { name: string }>; rows: Array<unknown[] | Record<string, unknown>> };
    const row = body.rows[0];
    if (row === undefined) return 0;
    return Number(Array.isArray(row) ? row[0] : row.n);
  }

  function spans(s: ServiceName): SpanRecord[] {
    if (!existsSync(spanFile(s))) return [];
    return readFileSync(spanFile(s), 'utf8')
      .split('\n')
      .filter((l) => l.trim().length > 0)
      .map((l) => JSON.parse(l) as SpanRecord);
  }

  it('counts what was sent, passes the metric checks and links one trace through all three services', async () => {
    // Good events through ingest; the first request carries the caller's own trace context.
    const orders = Array.from({ length: ORDERS }, (_, i) => ({ contract: 'orders', ...sampleOrderJson(i + 1) }));
    const clicks = Array.from({ length: CLICKS }, (_, i) => ({ contract: 'clickstream', ...sampleClickJson(i + 1) }));
    const all = [...orders, ...clicks];
    for (let i = 0; i < all.length; i += BATCH) {
      const headers: Record<string, string> = i === 0 ? { traceparent: `00-${callerTrace}-${callerSpan}-01` } : {};
      accepted += await post(all.slice(i, i + BATCH), headers);
    }
    expect(accepted).toBe(ORDERS + CLICKS);
    // Bad records straight into raw, bypassing ingest.
    await producer.sendBatch(invalid.map((r) => ({ topic: stack.topics.raw, key: null, value: r.value, headers: r.headers ?? {} })));

    // Bounded wait: every order visible in silver through query-api, and validate done with raw.
    await waitUntil('all orders in silver_orders via query-api', async () => (await silverOrders()) >= ORDERS, 60_000, 500);
    expect(await silverOrders()).toBe(ORDERS);
    await waitUntil('validate routed every raw record', async () => {
      const v = await scrape('validate');
      return sum(v, 'sluice_validate_events_out_total', { outcome: 'valid' }) + sum(v, 'sluice_validate_events_out_total', { outcome: 'dlq' }) >= accepted + invalid.length;
    }, 15_000, 500);
    // merge-compaction counts an append and records a fold's freshness after the commit returns,
    // and a commit can still be writing its checkpoint when query-api already sees the rows: wait
    // for both, bounded (the exact values are checked below).
    await waitUntil('merge-compaction counted the appends and the fold', async () => {
      const m = await scrape('merge-compaction');
      return sum(m, 'sluice_merge_compaction_events_out_total', { outcome: 'ok' }) >= accepted && sum(m, 'sluice_merge_compaction_freshness_seconds_count') > 0;
    }, 15_000, 250);

    // The catalog and every alert/dashboard expression against the live scrapes.
    const urls: Partial<Record<ServiceId, string>> = Object.fromEntries(SERVICES.map((s) => [s, `http://127.0.0.1:${stack.get(s).opsPort}/metrics`]));
    const check = await checkRunningServices(path.join(ROOT, 'deploy'), urls);
    expect(check.problems).toEqual([]);

    const [ing, val, mer, qry] = await Promise.all(SERVICES.map(scrape));
    expect(sum(ing, 'sluice_ingest_events_in_total', { outcome: 'accepted' })).toBe(accepted);
    expect(sum(ing, 'sluice_ingest_events_in_total', { outcome: 'rejected' })).toBe(0);
    expect(sum(val, 'sluice_validate_events_in_total', { outcome: 'consumed' })).toBe(accepted + invalid.length);
    expect(sum(val, 'sluice_validate_events_out_total', { outcome: 'valid' })).toBe(accepted);
    expect(sum(val, 'sluice_validate_events_out_total', { outcome: 'dlq' })).toBe(invalid.length);
    expect(sum(val, 'sluice_validate_dlq_records_total')).toBe(invalid.length);
    const versions = mer.filter((x) => x.name === 'sluice_merge_compaction_table_version');
    // Both orders tables report their version; a table written in one commit may still be at 0,
    // but several tables were committed more than once by now.
    expect(versions.find((x) => x.labels.table === CONTRACTS.orders.tables.silver)?.value).toBeGreaterThanOrEqual(0);
    expect(versions.find((x) => x.labels.table === CONTRACTS.orders.tables.bronze)?.value).toBeGreaterThanOrEqual(0);
    expect(Math.max(...versions.map((x) => x.value))).toBeGreaterThan(0);
    expect(sum(mer, 'sluice_merge_compaction_commits_total', { outcome: 'ok' })).toBeGreaterThan(versions.length);
    expect(sum(mer, 'sluice_merge_compaction_freshness_seconds_count')).toBeGreaterThan(0);
    expect(sum(mer, 'sluice_merge_compaction_events_out_total', { outcome: 'ok' })).toBe(accepted);
    expect(sum(qry, 'sluice_query_api_http_request_duration_seconds_count')).toBeGreaterThan(0);
    // The freshness query-api served (the dashboard's "freshness seen by query-api").
    expect(sum(qry, 'sluice_query_api_freshness_seconds_count', { table: CONTRACTS.orders.tables.silver })).toBeGreaterThan(0);
    for (const [service, samples] of [['validate', val], ['merge-compaction', mer]] as const) {
      const lag = samples.filter((x) => x.name === `sluice_${service.replace('-', '_')}_consumer_lag_messages`);
      expect({ service, lagSeries: lag.length > 0 }).toEqual({ service, lagSeries: true });
      for (const x of lag) expect(x.value).toBeGreaterThanOrEqual(0);
    }

    // Spans are exported in batches (about every second, by each process on its own timer):
    // wait until merge's and validate's are on disk.
    await waitUntil(
      'a merge.bronze-append span per accepted event and a validate.route span per routed record',
      () =>
        spans('merge-compaction').filter((s) => s.name === 'merge.bronze-append').length >= accepted &&
        spans('validate').filter((s) => s.name === 'validate.route').length >= accepted + 1,
      15_000,
      500,
    );
    const ingestSpans = spans('ingest');
    const validateSpans = spans('validate');
    const mergeSpans = spans('merge-compaction').filter((s) => s.name === 'merge.bronze-append');
    const routeSpans = validateSpans.filter((s) => s.name === 'validate.route');
    expect(routeSpans.filter((s) => s.attributes.outcome === 'valid')).toHaveLength(accepted);
    expect(mergeSpans).toHaveLength(accepted);
    // Only the sampled DLQ record has a span; the malformed and unsampled ones have none.
    const dlqSpans = routeSpans.filter((s) => s.attributes.outcome === 'dlq');
    expect(dlqSpans.map((s) => [s.traceId, s.parentSpanId, s.attributes.contract])).toEqual([[dlqTrace, dlqParent, 'orders']]);

    // Chain: caller → ingest producer span → validate.route → merge.bronze-append, one trace id.
    const byId = new Map([...ingestSpans, ...validateSpans, ...mergeSpans].map((s) => [s.spanId, s]));
    const chains = mergeSpans.map((m) => {
      const route = byId.get(m.parentSpanId ?? '');
      const publish = byId.get(route?.parentSpanId ?? '');
      return { m, route, publish };
    });
    for (const { m, route, publish } of chains) {
      expect(route).toMatchObject({ name: 'validate.route', service: 'validate', traceId: m.traceId, kind: 'consumer' });
      expect(publish).toMatchObject({ service: 'ingest', traceId: m.traceId, kind: 'producer' });
      expect(route?.attributes).toMatchObject({ outcome: 'valid', offset: expect.any(Number), topic: stack.topics.raw });
      expect(m.attributes).toMatchObject({ outcome: 'written', version: expect.any(Number) });
    }
    const pinned = chains.filter((c) => c.m.traceId === callerTrace);
    expect(pinned).toHaveLength(BATCH);
    expect(pinned[0].publish?.parentSpanId).toBe(callerSpan);
    const services = new Set([...ingestSpans, ...validateSpans, ...mergeSpans].filter((s) => s.traceId === callerTrace).map((s) => s.service));
    expect([...services].sort()).toEqual(['ingest', 'merge-compaction', 'validate']);
  }, 100_000);
});
