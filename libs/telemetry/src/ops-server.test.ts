import { Writable } from 'node:stream';
import { checkExposition, parseExposition } from './exposition';
import { httpMetricsHook } from './http-hook';
import { PROMETHEUS_CONTENT_TYPE } from './metrics';
import { startOpsServer } from './ops-server';
import { createTelemetry } from './telemetry';

const quiet = () => new Writable({ write: (_c, _e, done) => done() });

describe('ops server', () => {
  it('serves /metrics, /healthz and /readyz on 127.0.0.1 and 404 elsewhere', async () => {
    const t = createTelemetry({ service: 'validate', logDestination: quiet() });
    t.metrics.eventsIn.add(4, { outcome: 'consumed' });
    t.metrics.dlqRecords.add(1, { reason: 'VALIDATE_SCHEMA_MISMATCH', contract: 'orders' });
    let ready = false;
    const server = await startOpsServer({ port: 0, metricsText: t.metricsText, ready: () => ready });
    const base = `http://127.0.0.1:${server.port}`;
    try {
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toBe(PROMETHEUS_CONTENT_TYPE);
      const text = await metrics.text();
      expect(text).toContain('sluice_validate_events_in_total{outcome="consumed"} 4');
      expect(text).toContain('sluice_validate_dlq_records_total{reason="VALIDATE_SCHEMA_MISMATCH",contract="orders"} 1');
      expect(checkExposition(text, 'validate').problems).toEqual([]);

      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      ready = true;
      expect((await fetch(`${base}/readyz?verbose=1`)).status).toBe(200);
      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await server.close();
      await t.shutdown();
    }
  });

  it('answers 500 instead of crashing when a probe throws', async () => {
    const server = await startOpsServer({
      port: 0,
      metricsText: async () => { throw new Error('collect failed'); },
      live: () => { throw new Error('probe failed'); },
    });
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`)).status).toBe(500);
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(500);
    } finally {
      await server.close();
    }
  });

  it('answers 503 when /metrics or a probe hangs, and keeps serving', async () => {
    let hang = true;
    const server = await startOpsServer({
      port: 0,
      answerTimeoutMs: 200,
      metricsText: () => new Promise<string>(() => undefined),
      live: () => (hang ? new Promise<boolean>(() => undefined) : true),
    });
    try {
      const started = performance.now();
      const metrics = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(metrics.status).toBe(503);
      expect(await metrics.json()).toEqual({ status: 'timeout' });
      expect(performance.now() - started).toBeLessThan(5_000);
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(503);
      hang = false;
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('fails clearly when the port is taken', async () => {
    const first = await startOpsServer({ port: 0, metricsText: async () => '' });
    try {
      await expect(startOpsServer({ port: first.port, metricsText: async () => '' })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.close();
    }
  });
});

describe('http metrics hook', () => {
  const t = createTelemetry({ service: 'query-api', logDestination: quiet() });
  afterAll(() => t.shutdown());

  it('labels by route pattern, method and status; unmatched URLs share one series', async () => {
    const hook = httpMetricsHook(t.metrics);
    await hook({ method: 'GET', routeOptions: { url: '/v1/tables/:table/rows/:key' } }, { statusCode: 200, elapsedTime: 12 });
    await hook({ method: 'GET', routeOptions: { url: '/v1/tables/:table/rows/:key' } }, { statusCode: 200, elapsedTime: 30 });
    for (let i = 0; i < 5; i++) await hook({ method: 'GET', routeOptions: {} }, { statusCode: 404, elapsedTime: 1 });
    await hook({ method: 'GET' }, { statusCode: 404, elapsedTime: 1 });
    const text = await t.metricsText();
    const n = 'sluice_query_api_http_request_duration_seconds';
    expect(text).toContain(`${n}_count{method="GET",route="/v1/tables/:table/rows/:key",status="200"} 2`);
    const sum = parseExposition(text).samples.find((x) => x.name === `${n}_sum` && x.labels.status === '200');
    expect(sum?.value).toBeCloseTo(0.042, 9);
    expect(text).toContain(`${n}_count{method="GET",route="unmatched",status="404"} 6`);
  });
});
