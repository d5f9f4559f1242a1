import { type CatalogEntry, type ServiceId, lookupSeries, metricCatalog } from './catalog';

/** One sample line of a Prometheus text exposition. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A parsed exposition: samples plus the `# TYPE` declared per family. */
export interface Exposition {
  readonly samples: readonly Sample[];
  readonly types: ReadonlyMap<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

/** Parses the Prometheus text format (version 0.0.4). Unparseable lines are reported, not skipped. */
export function parseExposition(text: string): Exposition & { problems: string[] } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const problems: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (trimmed.startsWith('#')) {
      const m = /^#\s+TYPE\s+(\S+)\s+(\S+)/.exec(trimmed);
      if (m) types.set(m[1], m[2]);
      continue;
    }
    const m = SAMPLE.exec(trimmed);
    if (!m) {
      problems.push(`unparseable line: ${trimmed.slice(0, 120)}`);
      continue;
    }
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    samples.push({ name: m[1], labels, value });
  }
  return { samples, types, problems };
}

/**
 * The value of the one sample named `name` whose labels include `labels` (others may be present),
 * or undefined when none matches. Several matches throw: the caller's labels were ambiguous.
 */
export function sampleValue(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  const matches = parseExposition(text).samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matches.length > 1) throw new Error(`several series of ${name} match ${JSON.stringify(labels)}`);
  return matches[0]?.value;
}

/** Result of {@link checkExposition}. */
export interface ExpositionCheck {
  /** Empty when the scrape matches the catalog. */
  readonly problems: string[];
  /** Catalog metrics of the service seen in the scrape. */
  readonly seen: string[];
  /** Catalog metrics of the service not (yet) in the scrape: nothing recorded them so far. */
  readonly notSeen: string[];
}

// Series every scrape may carry that are not Sluice metrics.
const FOREIGN = new Set(['target_info']);

/**
 * Checks a scraped `/metrics` text of `service` against the catalog: every `sluice_` series is
 * a catalog metric of that service, with the catalog's type and exactly its labels (plus `le`
 * on histogram buckets). Use it against a running service:
 * `checkExposition(await (await fetch(url)).text(), 'validate')`.
 */
export function checkExposition(text: string, service: ServiceId): ExpositionCheck {
  const { samples, types, problems } = parseExposition(text);
  const own = metricCatalog(service);
  const seen = new Set<string>();
  for (const s of samples) {
    if (FOREIGN.has(s.name)) continue;
    const entry = lookupSeries(s.name);
    if (!entry) {
      problems.push(`${s.name} is not in the telemetry catalog`);
      continue;
    }
    if (entry.service !== service) {
      problems.push(`${s.name} belongs to ${entry.service}, not ${service}`);
      continue;
    }
    seen.add(entry.name);
    problems.push(...labelProblems(s, entry));
  }
  for (const name of seen) {
    const entry = own.find((e) => e.name === name) as CatalogEntry;
    const declared = types.get(name);
    if (declared !== undefined && declared !== entry.type) problems.push(`${name} has TYPE ${declared}, catalog says ${entry.type}`);
  }
  return {
    problems: [...new Set(problems)],
    seen: [...seen].sort(),
    notSeen: own.map((e) => e.name).filter((n) => !seen.has(n)).sort(),
  };
}

function labelProblems(sample: Sample, entry: CatalogEntry): string[] {
  const expected = new Set(entry.labels);
  if (entry.type === 'histogram' && sample.name.endsWith('_bucket')) expected.add('le');
  const got = Object.keys(sample.labels);
  const out: string[] = [];
  for (const l of got) if (!expected.has(l)) out.push(`${sample.name} has label "${l}" the catalog does not declare`);
  for (const l of expected) if (!got.includes(l)) out.push(`${sample.name} lacks label "${l}"`);
  return out;
}
