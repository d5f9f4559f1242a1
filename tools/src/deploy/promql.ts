/**
 * Just enough PromQL lexing to find which metrics and labels an expression refers to, so alert
 * rules and dashboards can be checked against the telemetry catalog without a Prometheus.
 */

/** A metric selector found in an expression, with the label names its matchers use. */
export interface Selector {
  readonly metric: string;
  readonly matcherLabels: readonly string[];
}

/** What an expression references. */
export interface PromqlRefs {
  readonly selectors: readonly Selector[];
  /** Labels named in by/without/on/ignoring/group_left/group_right lists. */
  readonly groupingLabels: readonly string[];
}

const KEYWORDS = new Set([
  'and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan', 'atan2',
]);
const GROUPING = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
const TOKEN = /\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|[A-Za-z_:][A-Za-z0-9_:]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?[a-zA-Z]*|\{[^}]*\}|\[[^\]]*\]|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|\s+|./g;

/** Extracts metric selectors and grouping labels from one PromQL expression. */
export function promqlRefs(expr: string): PromqlRefs {
  const groupingLabels: string[] = [];
  const withoutGrouping = expr.replace(GROUPING, (_m, _kw: string, list: string) => {
    for (const l of list.split(',').map((s) => s.trim()).filter(Boolean)) groupingLabels.push(l);
    return ' ';
  });
  const tokens = withoutGrouping.match(TOKEN) ?? [];
  const selectors: Selector[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!/^[A-Za-z_:][A-Za-z0-9_:]*$/.test(t) || KEYWORDS.has(t.toLowerCase())) continue;
    let j = i + 1;
    while (j < tokens.length && /^\s+$/.test(tokens[j])) j++;
    const next = tokens[j];
    if (next === '(') continue; // a function or aggregation
    const matcherLabels = next?.startsWith('{') ? labelsOfMatchers(next) : [];
    selectors.push({ metric: t, matcherLabels });
  }
  // A selector may be written `{__name__="x"}`; catalog checks need the name either way.
  for (const t of tokens) {
    const m = /^\{\s*__name__\s*=\s*"([^"]+)"/.exec(t);
    if (m) selectors.push({ metric: m[1], matcherLabels: labelsOfMatchers(t).filter((l) => l !== '__name__') });
  }
  return { selectors, groupingLabels };
}

/** Only the metric names of {@link promqlRefs}. */
export function metricNamesInPromql(expr: string): string[] {
  return [...new Set(promqlRefs(expr).selectors.map((s) => s.metric))];
}

function labelsOfMatchers(braces: string): string[] {
  const out: string[] = [];
  for (const m of braces.slice(1, -1).matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)/g)) out.push(m[1]);
  return out;
}
