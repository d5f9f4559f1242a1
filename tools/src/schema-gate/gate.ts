import avro from 'avsc';
import type { AnyContract, CompatibilityLevel, SchemaVersion } from '@sluice/contracts';
import { readerBreaks, type Break } from './compatibility';

/** The levels the gate reports on, weakest first. */
export const REPORTED_LEVELS = ['BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE'] as const;

/** One broken (newer, older) pair in one direction. */
export interface Finding {
  readonly newer: number;
  readonly older: number;
  /** BACKWARD: the newer reader reads older data. FORWARD: the older reader reads newer data. */
  readonly direction: 'BACKWARD' | 'FORWARD';
  readonly breaks: readonly Break[];
}

/** Result of one level over a history. */
export interface LevelResult {
  readonly level: CompatibilityLevel;
  readonly findings: readonly Finding[];
}

/** What the gate found for one contract's history. */
export interface HistoryReport {
  readonly contract: string;
  readonly declared: CompatibilityLevel;
  readonly versions: readonly number[];
  readonly levels: readonly LevelResult[];
  /** Problems with the history itself (version numbering, schemas avsc cannot parse). */
  readonly problems: readonly string[];
  /** True when the declared level holds and the history has no problems. */
  readonly ok: boolean;
}

function directionsOf(level: CompatibilityLevel): ('BACKWARD' | 'FORWARD')[] {
  if (level.startsWith('BACKWARD')) return ['BACKWARD'];
  if (level.startsWith('FORWARD')) return ['FORWARD'];
  if (level.startsWith('FULL')) return ['BACKWARD', 'FORWARD'];
  return [];
}

const pairCache = new WeakMap<object, WeakMap<object, readonly Break[]>>();

/** Breaks of reading `writer` data with `reader`, cross-checked with avsc's own resolver. */
export function pairBreaks(reader: object, writer: object): readonly Break[] {
  let byWriter = pairCache.get(reader);
  if (byWriter === undefined) pairCache.set(reader, (byWriter = new WeakMap()));
  const cached = byWriter.get(writer);
  if (cached !== undefined) return cached;
  const breaks = [...readerBreaks(reader, writer)];
  if (breaks.length === 0) {
    // Belt and braces: if avsc (what the services decode with) cannot resolve, that is a break too.
    try {
      avro.Type.forSchema(reader as avro.Schema).createResolver(avro.Type.forSchema(writer as avro.Schema));
    } catch (err) {
      breaks.push({ path: '', message: `avsc cannot resolve the schemas: ${(err as Error).message}` });
    }
  }
  byWriter.set(writer, breaks);
  return breaks;
}

/** Checks one level over a history (oldest first): each version against the previous one, or all older ones when transitive. */
export function checkLevel(versions: readonly SchemaVersion[], level: CompatibilityLevel): LevelResult {
  const transitive = level.endsWith('_TRANSITIVE');
  const findings: Finding[] = [];
  for (let i = 1; i < versions.length; i++) {
    const newer = versions[i];
    const olders = transitive ? versions.slice(0, i) : [versions[i - 1]];
    for (const older of olders) {
      for (const direction of directionsOf(level)) {
        const breaks = direction === 'BACKWARD' ? pairBreaks(newer.schema, older.schema) : pairBreaks(older.schema, newer.schema);
        if (breaks.length > 0) findings.push({ newer: newer.version, older: older.version, direction, breaks });
      }
    }
  }
  return { level, findings };
}

/** Checks a contract's history (optionally with a candidate schema appended as the next version). */
export function checkContract(contract: AnyContract, candidate?: object): HistoryReport {
  const versions: SchemaVersion[] = [...contract.versions];
  if (candidate !== undefined) versions.push({ version: versions[versions.length - 1].version + 1, schema: candidate as SchemaVersion['schema'] });
  const problems: string[] = [];
  versions.forEach((v, i) => {
    if (v.version !== i + 1) problems.push(`version ${v.version} is at position ${i + 1}: versions must be numbered 1, 2, 3, … with none removed`);
    try {
      avro.Type.forSchema(v.schema as avro.Schema);
    } catch (err) {
      problems.push(`version ${v.version} is not a valid Avro schema: ${(err as Error).message}`);
    }
  });
  const levels = problems.length > 0 ? [] : REPORTED_LEVELS.map((level) => checkLevel(versions, level));
  if (problems.length === 0) problems.push(...removedFields(versions));
  const declared = levels.find((l) => l.level === contract.compatibility);
  const ok = problems.length === 0 && (contract.compatibility === 'NONE' || (declared !== undefined && declared.findings.length === 0));
  return { contract: contract.name, declared: contract.compatibility, versions: versions.map((v) => v.version), levels, problems, ok };
}

/**
 * Fields of an earlier version the latest one no longer has (by name or alias). Avro lets an
 * optional field go, but validate turns every event into the latest schema: the values that
 * producers still on the earlier version send would be dropped without a word, while the tables
 * keep the column. Keep the field, nullable, instead.
 */
function removedFields(versions: readonly SchemaVersion[]): string[] {
  const latest = versions[versions.length - 1];
  const kept = fieldPaths(latest.schema, '', true);
  const out: string[] = [];
  for (const older of versions.slice(0, -1)) {
    for (const path of fieldPaths(older.schema, '', false)) {
      if (kept.has(path) || out.some((p) => p.startsWith(`field "${path}" `))) continue;
      out.push(`field "${path}" of version ${older.version} is not in version ${latest.version}: validate turns every event into the latest schema, so what producers still on version ${older.version} send in it would be dropped without a word; keep it (nullable, with a default) instead`);
    }
  }
  return out;
}

/** Dotted paths of every record field in a schema (through unions, arrays and maps); `withAliases` adds each field's aliases. */
function fieldPaths(schema: unknown, prefix: string, withAliases: boolean, out = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const branch of schema) fieldPaths(branch, prefix, withAliases, out);
    return out;
  }
  if (typeof schema !== 'object' || schema === null) return out;
  const s = schema as { type?: unknown; fields?: Array<{ name: string; type: unknown; aliases?: string[] }>; items?: unknown; values?: unknown };
  if (s.type === 'record' && Array.isArray(s.fields)) {
    for (const f of s.fields) {
      // Under an alias too: a renamed record-typed field keeps its subfields.
      for (const name of withAliases ? [f.name, ...(f.aliases ?? [])] : [f.name]) {
        out.add(prefix + name);
        fieldPaths(f.type, `${prefix}${name}.`, withAliases, out);
      }
    }
  } else if (s.type === 'array') fieldPaths(s.items, prefix, withAliases, out);
  else if (s.type === 'map') fieldPaths(s.values, prefix, withAliases, out);
  else if (typeof s.type === 'object') fieldPaths(s.type, prefix, withAliases, out);
  return out;
}

/** Plain-words rendering of a report, one line per level and one per break. */
export function renderReport(report: HistoryReport): string {
  const lines = [`${report.contract}: versions ${report.versions.join(', ')}; declared ${report.declared} — ${report.ok ? 'OK' : 'BROKEN'}`];
  for (const p of report.problems) lines.push(`  problem: ${p}`);
  for (const level of report.levels) {
    const mark = level.level === report.declared ? ' (declared)' : '';
    lines.push(`  ${level.level.padEnd(20)} ${level.findings.length === 0 ? 'ok' : 'breaks'}${mark}`);
    for (const f of level.findings) {
      const who = f.direction === 'BACKWARD' ? `a v${f.newer} reader cannot read v${f.older} data` : `a v${f.older} reader cannot read v${f.newer} data`;
      for (const b of f.breaks) lines.push(`    - ${who}: ${b.message}`);
    }
  }
  return lines.join('\n');
}
