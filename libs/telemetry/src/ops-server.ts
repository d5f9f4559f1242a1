import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PROMETHEUS_CONTENT_TYPE } from './metrics';

/** Options of {@link startOpsServer}. */
export interface OpsServerOptions {
  /** TCP port; 0 picks a free one (see `port` on the result). */
  readonly port: number;
  /** Interface to bind; default 127.0.0.1. Containers set 0.0.0.0 so the kubelet can probe. */
  readonly host?: string;
  /** Renders `/metrics` (pass `telemetry.metricsText`). */
  readonly metricsText: () => Promise<string>;
  /** `/healthz`: false → 503. Default: always live while the process serves requests. */
  readonly live?: () => boolean | Promise<boolean>;
  /** `/readyz`: false → 503 (e.g. before partitions are assigned or while draining). */
  readonly ready?: () => boolean | Promise<boolean>;
  /**
   * Longest any answer may take before it is a 503 (default {@link ANSWER_TIMEOUT_MS}): a scrape
   * or a probe that hangs is answered, and the scraper sees a failed scrape at once instead of
   * its own timeout.
   */
  readonly answerTimeoutMs?: number;
}

/** Below Prometheus' default scrape timeout (10 s) and a kubelet probe's usual timeouts' sum. */
export const ANSWER_TIMEOUT_MS = 8_000;

/** A running ops server. */
export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A minimal HTTP server with GET /metrics, /healthz and /readyz for services without fastify
 * (validate, merge-compaction). Anything else is 404.
 */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const answer = async (): Promise<void> => {
      if (path === '/metrics') {
        const text = await options.metricsText();
        if (!res.headersSent) res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE }).end(text);
      } else if (path === '/healthz' || path === '/readyz') {
        const check = path === '/healthz' ? options.live : options.ready;
        const ok = check ? await check() : true;
        if (!res.headersSent) res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
      } else {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'not found' }));
      }
    };
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'timeout' }));
    }, options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS);
    answer()
      .catch(() => {
        if (res.headersSent) return;
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error' }));
      })
      .finally(() => clearTimeout(timer));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
