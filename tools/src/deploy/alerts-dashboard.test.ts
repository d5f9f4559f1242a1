import { spawnSync } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { CHANNELS, createTelemetry, startOpsServer } from '@sluice/telemetry';
import { parse } from 'yaml';
import { k8sTools } from './k8s-render';
import { alertExprs, checkExprsAgainstCatalog, checkExprsAgainstScrapes, checkRunningServices, dashboardExprs } from './metric-refs';
import { metricNamesInPromql, promqlRefs } from './promql';

const deploy = join(__dirname, '../../../deploy');
const alertsFile = join(deploy, 'prometheus/alerts.yml');
const dashboards = join(deploy, 'grafana/dashboards');
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

describe('promql references', () => {
  it('finds metrics, not functions, keywords, labels, durations, strings or variables', () => {
    const expr = `histogram_quantile(0.95, sum by (le, table) (rate(sluice_a_seconds_bucket{table=~"$table", outcome!="x y"}[$__rate_interval] offset 1h)))
      / on (table) group_left sum without (pod) (sluice_b_total) and bool 3 > time() - max(sluice_c_timestamp_seconds)`;
    expect(metricNamesInPromql(expr)).toEqual(['sluice_a_seconds_bucket', 'sluice_b_total', 'sluice_c_timestamp_seconds']);
    const refs = promqlRefs(expr);
    expect(refs.selectors[0].matcherLabels).toEqual(['table', 'outcome']);
    expect(refs.groupingLabels).toEqual(['le', 'table', 'table', 'pod']);
    expect(metricNamesInPromql('{__name__="sluice_x_total", a="b"}')).toEqual(['sluice_x_total']);
    expect(metricNamesInPromql('sum(rate(foo{a="sum(bar)"}[5m]))')).toEqual(['foo']);
  });
});

describe('alert rules and dashboards against the telemetry catalog', () => {
  const alerts = alertExprs(alertsFile);
  const panels = dashboardExprs(dashboards);

  it('each alert has a first-response row in docs/operations.md', () => {
    const runbook = readFileSync(join(__dirname, '../../../docs/operations.md'), 'utf8');
    const names = alerts.map((a) => a.source.replace(/^[^:]*: /, ''));
    expect(names.length).toBeGreaterThanOrEqual(10);
    expect(names.filter((name) => !new RegExp(`^\\|[^\\n]*\\b${name}\\b`, 'm').test(runbook))).toEqual([]);
  });

  it('reference only catalog metrics with their declared labels', () => {
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    expect(panels.length).toBeGreaterThanOrEqual(25);
    expect(checkExprsAgainstCatalog([...alerts, ...panels])).toEqual([]);
  });

  it('catches a misspelt metric, a bare histogram and an undeclared label', () => {
    const problems = checkExprsAgainstCatalog([
      { source: 'a', expr: 'sum(rate(sluice_validate_dlq_record_total[5m]))' },
      { source: 'b', expr: 'sluice_merge_compaction_commit_duration_seconds > 1' },
      { source: 'c', expr: 'sum by (pod) (sluice_validate_consumer_lag_messages{group="g"})' },
      { source: 'd', expr: 'sluice_ingest_consumer_lag_messages' },
      { source: 'e', expr: '' },
    ]);
    expect(problems).toEqual([
      'a: sluice_validate_dlq_record_total is not in the telemetry catalog',
      'b: histogram sluice_merge_compaction_commit_duration_seconds is only scraped as _bucket, _sum and _count',
      'c: sluice_validate_consumer_lag_messages has no label "group"',
      'c: grouping label "pod" is declared by none of sluice_validate_consumer_lag_messages',
      'd: sluice_ingest_consumer_lag_messages is not in the telemetry catalog',
      'e: empty expression',
    ]);
  });

  it('alert on what operations asked for, each with a duration, severity and summary', () => {
    const doc = parse(readFileSync(alertsFile, 'utf8')) as {
      groups: Array<{ rules: Array<{ alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }> }>;
    };
    const rules = doc.groups.flatMap((g) => g.rules);
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    const uses = (name: string, metricPart: string) => expect(rules.find((r) => r.alert === name)?.expr).toContain(metricPart);
    uses('SluiceValidateLagHigh', 'consumer_lag_messages');
    uses('SluiceMergeLagHigh', 'consumer_lag_messages');
    uses('SluiceFreshnessSLOAtRisk', 'freshness_seconds_bucket');
    uses('SluiceDlqRateSpike', 'dlq_records_total');
    uses('SluiceTableCommitFailures', 'commits_total');
    uses('SluiceSmallFilesGrowing', 'table_small_files');
    uses('SluiceTableNotCommitting', 'last_commit_timestamp_seconds');
    uses('SluiceValidateNotCommitting', 'transaction_duration_seconds_count');
    for (const r of rules) {
      expect(r.for).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical']).toContain(r.labels?.severity);
      expect(r.annotations?.summary?.length).toBeGreaterThan(10);
    }
  });

  it('dashboard panels are laid out on the grid and use the provisioned datasource', () => {
    const ds = parse(readFileSync(join(deploy, 'grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as { datasources: Array<{ uid: string }> };
    const uid = ds.datasources[0].uid;
    const dash = JSON.parse(readFileSync(join(dashboards, 'sluice-overview.json'), 'utf8')) as {
      uid: string;
      panels: Array<{ id: number; type: string; gridPos: { x: number; w: number }; datasource?: { uid: string }; targets?: Array<{ datasource: { uid: string } }> }>;
    };
    expect(dash.uid).toBe('sluice-overview');
    const ids = dash.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dash.panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      if (p.type === 'row') continue;
      expect(p.datasource?.uid).toBe(uid);
      for (const t of p.targets ?? []) expect(t.datasource.uid).toBe(uid);
    }
  });
});

describe('alert rules and dashboards through Prometheus’ own parsers (promql-check)', () => {
  const { promqlCheck } = k8sTools();
  const run = (...files: string[]) => spawnSync(promqlCheck, files, { encoding: 'utf8' });

  it('accepts the rule file and every dashboard query', () => {
    const r = run(alertsFile, join(dashboards, 'sluice-overview.json'));
    expect(r.stdout).toContain('2 files ok');
    expect(r.status).toBe(0);
  });

  it('rejects broken PromQL, an unknown template function and a broken panel query', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-promql-'));
    try {
      const rules = readFileSync(alertsFile, 'utf8')
        .replace('sum by (topic) (sluice_validate_consumer_lag_messages) > 500000', 'sum by (topic) (sluice_validate_consumer_lag_messages) > > 500000')
        .replace('{{ $labels.table }} has {{ $value | humanize }} small files', '{{ $labels.table }} has {{ $value | nosuchfn }} small files');
      const dash = JSON.parse(readFileSync(join(dashboards, 'sluice-overview.json'), 'utf8'));
      dash.panels[1].targets[0].expr = 'sum(rate(sluice_ingest_events_in_total[$__rate_interval])';
      writeFileSync(join(dir, 'alerts.yml'), rules);
      writeFileSync(join(dir, 'dash.json'), JSON.stringify(dash));
      const r = run(join(dir, 'alerts.yml'), join(dir, 'dash.json'));
      expect(r.status).toBe(1);
      expect(r.stdout).toMatch(/SluiceValidateLagHigh.*parse error/);
      expect(r.stdout).toMatch(/function "nosuchfn" not defined/);
      expect(r.stdout).toMatch(/dash\.json: panel .*unclosed left parenthesis/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// deploy/prometheus/promql-check/alerts_test.go evaluates alert expressions with Prometheus' own
// engine over loaded series: a stuck table fires, an idle one does not (the rule once joined on
// the process's total lag, and every idle table paged while any topic lagged).
describe('alert rules under Prometheus’ engine (go test)', () => {
  it('fire for the cases they are for and stay quiet otherwise', () => {
    const r = spawnSync('go', ['test', '-count=1', '.'], {
      cwd: join(deploy, 'prometheus/promql-check'),
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      encoding: 'utf8',
      timeout: 540_000,
    });
    if (r.status !== 0) throw new Error(`go test failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
    expect(r.stdout).toMatch(/^ok\s+sluice\/deploy\/prometheus\/promql-check/m);
  }, 600_000);
});

describe('alert and dashboard metrics against a running service', () => {
  it('reports a clean scrape and lists metrics nothing has recorded yet', async () => {
    const t = createTelemetry({ service: 'merge-compaction', logDestination: quiet() });
    const server = await startOpsServer({ port: 0, metricsText: t.metricsText });
    try {
      diagnostics.channel(CHANNELS.kafkaLag).publish({ groupId: 'g', topic: 'orders.valid', partition: 0, lag: 9 });
      diagnostics.channel(CHANNELS.lakeCommit).publish({ table: 'orders_silver', version: 3, operation: 'WRITE', attempts: 1, durationMs: 12 });
      const result = await checkRunningServices(deploy, { 'merge-compaction': `http://127.0.0.1:${server.port}/metrics` });
      expect(result.problems).toEqual([]);
      expect(result.missing).not.toContain('sluice_merge_compaction_consumer_lag_messages');
      expect(result.missing).not.toContain('sluice_merge_compaction_last_commit_timestamp_seconds');
      expect(result.missing).toContain('sluice_merge_compaction_freshness_seconds');
      // Only the scraped service is judged.
      expect(result.missing.every((n) => n.startsWith('sluice_merge_compaction_'))).toBe(true);
    } finally {
      await server.close();
      await t.shutdown();
    }
  });

  it('flags a service exposing a metric outside the catalog', () => {
    const r = checkExprsAgainstScrapes([], { ingest: 'sluice_ingest_surprise_total 1\n' });
    expect(r.problems).toEqual(['ingest: sluice_ingest_surprise_total is not in the telemetry catalog']);
  });
});
