import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * Which tables and columns the dashboard page charts. Sent to the page as /dashboard/config.json
 * (names only, nothing secret); the page itself calls the normal /v1 API with the viewer's token.
 */
export interface DashboardSettings {
  /**
   * Directory of the page's files (index.html, dashboard.js). main.ts passes the one beside
   * itself: src/dashboard when run from sources, the copy deploy/bundle.sh puts beside main.js.
   */
  assetsDir: string;
  refreshMs: number;
  /** Bucket width of the charts, one of the query API's intervals. */
  interval: '10s' | '1m' | '5m' | '15m' | '1h';
  /** How many buckets back from the table's newest event the charts span. */
  buckets: number;
  /** Tables whose freshness is listed (all readable tables when empty). */
  freshnessTables: string[];
  /** Events per bucket: a table with an event-time column (bronze). */
  throughput?: { table: string; timeColumn: string };
  /** Dead-letter rate by reason from validate's counters (`GET /v1/pipeline/dlq`). */
  dlqMetrics?: boolean;
  /** Orders by status over time (silver or gold). */
  orders?: { table: string; statusColumn: string; timeColumn: string };
}

/** `GET /dashboard`: a plain HTML page and a small script, no build step. */
export function dashboardRoutes(app: FastifyInstance, settings: DashboardSettings): void {
  // Read once at start: the page is static and small.
  const html = readFileSync(join(settings.assetsDir, 'index.html'), 'utf8');
  const script = readFileSync(join(settings.assetsDir, 'dashboard.js'), 'utf8');
  const headers = {
    'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-cache',
  };
  app.get('/dashboard', { schema: { tags: ['dashboard'], summary: 'Pipeline dashboard page' } }, async (_req, reply) =>
    reply.headers(headers).type('text/html; charset=utf-8').send(html),
  );
  app.get('/dashboard/dashboard.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.headers(headers).type('text/javascript; charset=utf-8').send(script),
  );
  // The page's settings, without where its files live on this server (a path is nobody's business).
  const { assetsDir: _assetsDir, ...pageSettings } = settings;
  app.get('/dashboard/config.json', { schema: { hide: true } }, async () => pageSettings);
}
