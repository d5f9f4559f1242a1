/// <reference lib="dom" />
// The dashboard page end to end in real headless Chromium: it loads, shows numbers from real
// tables, and updates after new data is committed. A screenshot is kept under test-artifacts/.
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { type OpsServer, type Telemetry, createTelemetry, startOpsServer } from '@sluice/telemetry';
import { type BrowserContext, type Page, chromium } from 'playwright-core';
import { TOKEN, type TestApp, createOrders, orderRow, query, startApp, tempDir } from './support';

const ARTIFACTS = path.resolve(__dirname, '../../../test-artifacts');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

describe('dashboard page in headless Chromium', () => {
  let root: string;
  let t: TestApp;
  let context: BrowserContext;
  let page: Page;
  const pageErrors: string[] = [];
  let profile: string;
  let validate: Telemetry;
  let ops: OpsServer;
  let baseUrl: string;

  beforeAll(async () => {
    await fs.access(CHROMIUM).catch(() => {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium)`);
    });
    root = await tempDir('dashboard');
    const silver = await createOrders(root, 'silver_orders');
    await silver.merge({ source: { rows: Array.from({ length: 600 }, (_, i) => orderRow(i)) }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 600 }] });
    const bronze = await createOrders(root, 'bronze_orders');
    await bronze.append({ rows: Array.from({ length: 600 }, (_, i) => orderRow(i)) });
    // validate's real telemetry and ops server: the DLQ panel reads its counters.
    validate = createTelemetry({ service: 'validate', logLevel: 'error', subscribeChannels: false });
    ops = await startOpsServer({ port: 0, metricsText: () => validate.metricsText() });
    validate.metrics.dlqRecords.add(5, { reason: 'DECODE_SCHEMA_MISMATCH', contract: 'orders' });
    validate.metrics.dlqRecords.add(2, { reason: 'RULE_RANGE', contract: 'orders' });

    t = await startApp(root, ['silver_orders', 'bronze_orders'], {
      dlqMetricsUrls: [`http://127.0.0.1:${ops.port}/metrics`],
      refreshMs: 0,
      dashboard: {
        refreshMs: 400,
        interval: '15m',
        buckets: 48, // 12 h: the window spans all the test data
        throughput: { table: 'bronze_orders', timeColumn: 'event_time' },
        orders: { table: 'silver_orders', statusColumn: 'status', timeColumn: 'event_time' },
        dlqMetrics: true,
      },
    });
    const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    profile = await fs.mkdtemp(path.join(os.tmpdir(), 'query-api-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    // A throw inside this listener would not fail a test: errors are kept and checked after each.
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${base}/dashboard#token=${TOKEN}`);
    baseUrl = base;
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await t?.close();
    await ops?.close();
    await validate?.shutdown();
    if (profile) await fs.rm(profile, { recursive: true, force: true });
  });

  afterEach(() => {
    // Emptied before the check: one test's page error must not fail every later test too.
    const errors = pageErrors.splice(0);
    expect(errors).toEqual([]);
  });

  const cellText = (selector: string) => page.$$eval(selector, (cells) => cells.map((c) => c.textContent ?? ''));
  const ordersTotals = async () => {
    const rows = await page.$$eval('#orders-totals tbody tr', (trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent ?? '')));
    return Object.fromEntries(rows.map(([status, , window]) => [status, Number(window)]));
  };

  it('loads and shows numbers from the real tables', async () => {
    await page.waitForFunction(() => Number(document.body.dataset.refreshes ?? 0) >= 1, undefined, { timeout: 20_000 });
    expect(page.url()).not.toContain(TOKEN); // the token leaves the address bar
    const freshness = await cellText('#freshness tbody td');
    expect(freshness).toEqual(expect.arrayContaining(['silver_orders', 'bronze_orders', '600']));

    // Orders by status in the chart window equal what the API answers for the same window.
    const expected = await query(t.app, 'silver_orders', { groupBy: ['status'], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
    const totals = await ordersTotals();
    expect(expected.body.rows.length).toBeGreaterThan(1); // the comparison below compares something
    for (const r of expected.body.rows) expect(totals[r.status]).toBe(r.n);
    expect(await page.$$eval('#orders-chart path[data-series]', (p) => p.length)).toBe(expected.body.rows.length);

    const dlq = await cellText('#dlq tbody td');
    expect(dlq.slice(0, 2)).toEqual(['DECODE_SCHEMA_MISMATCH', '5']);
    expect(dlq.slice(3, 5)).toEqual(['RULE_RANGE', '2']);
    // A rate needs two readings; then new dead letters show as a positive rate.
    validate.metrics.dlqRecords.add(30, { reason: 'RULE_RANGE', contract: 'orders' });
    await page.waitForFunction(() => {
      const row = Array.from(document.querySelectorAll('#dlq tbody tr')).find((tr) => tr.children[0]?.textContent === 'RULE_RANGE');
      return row?.children[1]?.textContent === '32' && Number(row.children[2]?.textContent) > 0;
    }, undefined, { timeout: 20_000 });
    expect(await page.textContent('#throughput-rate')).toMatch(/^\d+(\.\d+)? events\/s$/);
  }, 60_000);

  it('asks for another token when the one it holds is refused, instead of failing every refresh', async () => {
    const other = await context.newPage();
    try {
      other.on('pageerror', (err) => pageErrors.push(err.message));
      await other.goto(`${baseUrl}/dashboard#token=not-a-token-of-this-service`);
      await other.waitForSelector('#token-form', { state: 'visible', timeout: 20_000 });
      expect(await other.textContent('#status')).toMatch(/^the token was refused \(QUERY_AUTH_INVALID: .*\); enter another$/);
      expect(await other.isHidden('#panels')).toBe(true);
      expect(await other.evaluate(() => sessionStorage.getItem('sluice-token'))).toBeNull();
    } finally {
      await other.close();
    }
  }, 60_000);

  it('updates itself after new data lands', async () => {
    const silver = await LakeTable.open(new LocalStorage(path.join(root, 'silver_orders')));
    const before = (await ordersTotals()).cancelled ?? 0;
    const cancelled = Array.from({ length: 40 }, (_, i) => orderRow(600 + i, 1, 'cancelled'));
    const committed = await silver.merge({ source: { rows: cancelled }, keys: ['order_id'], versionColumn: 'version', deleteColumn: 'op', txns: [{ appId: 'fold:orders-0', version: 640 }] });
    await page.waitForFunction(
      (version) => Array.from(document.querySelectorAll('#freshness tbody tr')).some((tr) => tr.children[0]?.textContent === 'silver_orders' && tr.children[1]?.textContent === String(version)),
      committed.version,
      { timeout: 20_000 },
    );
    // The version shows while that refresh may still be drawing: wait for one more full refresh.
    const seen = await page.evaluate(() => Number(document.body.dataset.refreshes ?? 0));
    await page.waitForFunction((n) => Number(document.body.dataset.refreshes ?? 0) > n, seen, { timeout: 20_000 });
    const after = await ordersTotals();
    const expected = await query(t.app, 'silver_orders', { where: [{ column: 'status', op: '=', value: 'cancelled' }], aggregates: [{ fn: 'count', column: '*', as: 'n' }] });
    expect(after.cancelled).toBe(expected.body.rows[0].n);
    expect(after.cancelled).toBeGreaterThan(before);
    await fs.mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'query-api-dashboard.png'), fullPage: true });
  }, 60_000);
});
