import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type CatalogEntry, type ServiceId, checkExposition, lookupSeries } from '@sluice/telemetry';
import { parse } from 'yaml';
import { promqlRefs } from './promql';

/** One PromQL expression of an alert rule or a dashboard panel, with where it lives. */
export interface ExprRef {
  /** e.g. `alerts.yml: SluiceMergeLagHigh` or `sluice-overview.json: Commit latency p95 / p99 by table [A]`. */
  readonly source: string;
  readonly expr: string;
}

/** Every alert rule `expr` of a Prometheus rules file. */
export function alertExprs(file: string): ExprRef[] {
  const doc = parse(readFileSync(file, 'utf8')) as { groups?: Array<{ rules?: Array<{ alert?: string; record?: string; expr?: unknown }> }> };
  const out: ExprRef[] = [];
  for (const g of doc.groups ?? []) {
    for (const r of g.rules ?? []) {
      out.push({ source: `${file.split('/').pop()}: ${r.alert ?? r.record ?? '?'}`, expr: String(r.expr ?? '') });
    }
  }
  return out;
}

/** Every target `expr` of every panel (rows included) of the dashboards in `dir`. */
export function dashboardExprs(dir: string): ExprRef[] {
  const out: ExprRef[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const dash = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { panels?: Panel[] };
    const visit = (panels: Panel[] | undefined) => {
      for (const p of panels ?? []) {
        for (const t of p.targets ?? []) out.push({ source: `${name}: ${p.title ?? p.id} [${t.refId ?? '?'}]`, expr: String(t.expr ?? '') });
        visit(p.panels);
      }
    };
    visit(dash.panels);
  }
  return out;
}
interface Panel {
  id?: number;
  title?: string;
  targets?: Array<{ refId?: string; expr?: unknown }>;
  panels?: Panel[];
}

// Series Prometheus itself provides, allowed in expressions.
const PROMETHEUS_SERIES = new Set(['up', 'scrape_duration_seconds', 'ALERTS']);

/**
 * Checks expressions against the telemetry catalog: every metric exists (histograms only
 * through `_bucket`/`_sum`/`_count`), every matcher label is one the metric declares, every
 * grouping label is declared by some metric of the expression (or `le`). Returns problems.
 */
export function checkExprsAgainstCatalog(refs: readonly ExprRef[]): string[] {
  const problems: string[] = [];
  for (const ref of refs) {
    const { selectors, groupingLabels } = promqlRefs(ref.expr);
    if (ref.expr.trim() === '') problems.push(`${ref.source}: empty expression`);
    else if (selectors.length === 0) problems.push(`${ref.source}: references no metric`);
    const entries: CatalogEntry[] = [];
    let usesBuckets = false;
    for (const s of selectors) {
      if (PROMETHEUS_SERIES.has(s.metric)) continue;
      const entry = lookupSeries(s.metric);
      if (!entry) {
        problems.push(`${ref.source}: ${s.metric} is not in the telemetry catalog`);
        continue;
      }
      if (entry.type === 'histogram' && s.metric === entry.name) {
        problems.push(`${ref.source}: histogram ${s.metric} is only scraped as _bucket, _sum and _count`);
      }
      const bucket = entry.type === 'histogram' && s.metric.endsWith('_bucket');
      usesBuckets ||= bucket;
      entries.push(entry);
      for (const l of s.matcherLabels) {
        if (!entry.labels.includes(l) && !(bucket && l === 'le')) problems.push(`${ref.source}: ${s.metric} has no label "${l}"`);
      }
    }
    for (const l of groupingLabels) {
      if (l === 'le' && usesBuckets) continue;
      if (entries.length > 0 && !entries.some((e) => e.labels.includes(l))) {
        problems.push(`${ref.source}: grouping label "${l}" is declared by none of ${[...new Set(entries.map((e) => e.name))].join(', ')}`);
      }
    }
  }
  return problems;
}

/**
 * Checks expressions against RUNNING services: `scrapes` maps a service to the text of its
 * `/metrics`. Each scrape must match the catalog (see checkExposition); `missing` lists
 * metrics an alert or panel uses that a scraped service has not exposed yet (nothing recorded
 * them so far — expected right after start, suspicious after load).
 */
export function checkExprsAgainstScrapes(
  refs: readonly ExprRef[],
  scrapes: Partial<Record<ServiceId, string>>,
): { problems: string[]; missing: string[] } {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const [service, text] of Object.entries(scrapes) as Array<[ServiceId, string]>) {
    const check = checkExposition(text, service);
    problems.push(...check.problems.map((p) => `${service}: ${p}`));
    for (const n of check.seen) seen.add(n);
  }
  const missing = new Set<string>();
  for (const ref of refs) {
    for (const s of promqlRefs(ref.expr).selectors) {
      const entry = lookupSeries(s.metric);
      if (entry && entry.service in scrapes && !seen.has(entry.name)) missing.add(entry.name);
    }
  }
  return { problems, missing: [...missing].sort() };
}

/**
 * Scrapes each service's `/metrics` URL and runs {@link checkExprsAgainstScrapes} with the
 * repository's alert rules and dashboards. For the lead's end-to-end checks.
 */
export async function checkRunningServices(
  deployDir: string,
  urls: Partial<Record<ServiceId, string>>,
): Promise<{ problems: string[]; missing: string[] }> {
  const scrapes: Partial<Record<ServiceId, string>> = {};
  for (const [service, url] of Object.entries(urls) as Array<[ServiceId, string]>) {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
    scrapes[service] = await res.text();
  }
  const refs = [...alertExprs(join(deployDir, 'prometheus/alerts.yml')), ...dashboardExprs(join(deployDir, 'grafana/dashboards'))];
  return checkExprsAgainstScrapes(refs, scrapes);
}
