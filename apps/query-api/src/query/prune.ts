import { type Condition, type Filter, leafConditions, type Scalar } from './query-types';
import { type ColumnInfo, type TableShape, familyOf } from './table-schema';
import { normalizeValue } from './values';

/** What pruning needs to know about one live data file (from its Delta `add` action). */
export interface FileFacts {
  partitionValues: Record<string, string | null>;
  /** Parsed `add.stats`; absent when the writer recorded none (then the file is always read). */
  stats?: {
    numRecords?: number;
    minValues?: Record<string, unknown>;
    maxValues?: Record<string, unknown>;
    nullCount?: Record<string, unknown>;
  };
}

type Comparable = number | Buffer;
/** A value range [lo, hi]; a timestamp with sub-millisecond digits spans two milliseconds. */
interface Range {
  lo: Comparable;
  hi: Comparable;
}

/**
 * Condition checks one pruning may make (files × conditions). Past it only the top-level
 * conditions prune (and/or groups count as "may match"): pruning runs on the event loop before any
 * limit or timeout applies, and a table of 10k files × 256 nested conditions held it for seconds.
 */
export const PRUNE_BUDGET = 1_000_000;

/**
 * Keeps the files that may hold rows matching every top-level filter, judging by partition values
 * and min/max/null-count statistics. Conservative: when in doubt (no stats, an operator it does not
 * reason about, a type it cannot order) a file is kept. Filters must already be compiled (valid).
 * With `onlyColumns`, conditions on other columns never prune.
 */
export function pruneFiles<F extends FileFacts>(files: F[], filters: Filter[] | undefined, shape: TableShape, onlyColumns?: ReadonlySet<string>): F[] {
  if (!filters || filters.length === 0) return files;
  const where = files.length * leafConditions(filters) > PRUNE_BUDGET ? filters.filter((f) => !('and' in f) && !('or' in f)) : filters;
  if (where.length === 0) return files;
  // Columns outside `onlyColumns` are left out of the map, so their conditions always "may match".
  const byName = new Map(shape.columns.filter((c) => !onlyColumns || onlyColumns.has(c.name)).map((c) => [c.name, c]));
  const partitions = new Set(shape.partitionColumns);
  return files.filter((f) => where.every((w) => mayMatch(f, w, byName, partitions)));
}

function mayMatch(file: FileFacts, filter: Filter, byName: Map<string, ColumnInfo>, partitions: Set<string>): boolean {
  if ('and' in filter) return filter.and.every((f) => mayMatch(file, f, byName, partitions));
  if ('or' in filter) return filter.or.some((f) => mayMatch(file, f, byName, partitions));
  const c = byName.get(filter.column);
  if (!c) return true;
  return partitions.has(c.name) ? partitionMayMatch(file, filter, c) : statsMayMatch(file, filter, c);
}

function partitionMayMatch(file: FileFacts, cond: Condition, c: ColumnInfo): boolean {
  const raw = file.partitionValues[c.name];
  if (cond.op === 'is null') return raw === null || raw === undefined || raw === '';
  if (cond.op === 'is not null') return !(raw === null || raw === undefined || raw === '');
  if (raw === null || raw === undefined || raw === '') return false; // a null never compares true
  const v = toRange(raw, c, false);
  if (!v) return true;
  return rangeMayMatch(v, cond, c);
}

function statsMayMatch(file: FileFacts, cond: Condition, c: ColumnInfo): boolean {
  const stats = file.stats;
  if (!stats) return true;
  const nulls = numberOrUndefined(stats.nullCount?.[c.name] as unknown);
  const rows = numberOrUndefined(stats.numRecords);
  if (cond.op === 'is null') return nulls === undefined || nulls > 0;
  if (cond.op === 'is not null') return nulls === undefined || rows === undefined || nulls < rows;
  if (nulls !== undefined && rows !== undefined && rows > 0 && nulls === rows) return false;
  const min = stats.minValues?.[c.name];
  const max = stats.maxValues?.[c.name];
  if (min === undefined || min === null || max === undefined || max === null) return true;
  const lo = toRange(min, c, true);
  const hi = toRange(max, c, true);
  if (!lo || !hi) return true;
  return rangeMayMatch({ lo: lo.lo, hi: hi.hi }, cond, c);
}

/**
 * A condition's values as ranges in its column's order: computed once per condition, not once
 * per file. An `in` list is sorted, so a file is checked by binary search: a request with large
 * lists against thousands of files used to convert every value again for every file, seconds of
 * synchronous work before any limit applied. `undefined` entries: not orderable here.
 */
interface ConditionValues {
  readonly column: ColumnInfo;
  readonly single?: Range;
  readonly pair?: readonly [Range | undefined, Range | undefined];
  /** Sorted by lo then hi (so hi never decreases); undefined when some value is not orderable. */
  readonly list?: readonly Range[];
}

const conditionValues = new WeakMap<Condition, ConditionValues>();

function valuesOf(cond: Condition, c: ColumnInfo): ConditionValues {
  const known = conditionValues.get(cond);
  if (known?.column === c) return known;
  const value = (v: Scalar): Range | undefined => toRange(normalizeValue(v, c), c, false);
  let out: ConditionValues = { column: c };
  if (Array.isArray(cond.value)) {
    const ranges = cond.value.map(value);
    const list = ranges.every((r) => r !== undefined) ? (ranges as Range[]).sort((a, b) => cmp(a.lo, b.lo) || cmp(a.hi, b.hi)) : undefined;
    out = { column: c, list, pair: cond.value.length === 2 ? [ranges[0], ranges[1]] : undefined };
  } else if (cond.value !== undefined) {
    out = { column: c, single: value(cond.value) };
  }
  conditionValues.set(cond, out);
  return out;
}

/** Whether some range of `sorted` (see ConditionValues.list) overlaps [file.lo, file.hi]. */
function someOverlaps(sorted: readonly Range[], file: Range): boolean {
  // The first range not wholly below the file has the smallest lo of those that may overlap it.
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmp(sorted[mid].hi, file.lo) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < sorted.length && cmp(sorted[lo].lo, file.hi) <= 0;
}

/** Whether some value in [file.lo, file.hi] satisfies the condition. */
function rangeMayMatch(file: Range, cond: Condition, c: ColumnInfo): boolean {
  const values = valuesOf(cond, c);
  switch (cond.op) {
    case '=': {
      const v = values.single;
      return !v || (cmp(v.hi, file.lo) >= 0 && cmp(v.lo, file.hi) <= 0);
    }
    case '<':
    case '<=': {
      const v = values.single;
      return !v || cmp(file.lo, v.hi) <= 0;
    }
    case '>':
    case '>=': {
      const v = values.single;
      return !v || cmp(file.hi, v.lo) >= 0;
    }
    case 'in':
      return values.list === undefined || someOverlaps(values.list, file);
    case 'between': {
      if (values.pair === undefined) return true;
      const [lo, hi] = values.pair;
      return !lo || !hi || (cmp(file.hi, lo.lo) >= 0 && cmp(file.lo, hi.hi) <= 0);
    }
    case 'prefix': {
      const v = values.single;
      if (!v || !Buffer.isBuffer(v.lo) || !Buffer.isBuffer(file.lo) || !Buffer.isBuffer(file.hi)) return true;
      const p = v.lo;
      // Strings with prefix p sort from p up to p followed by the largest bytes: one lies in [lo, hi]
      // iff hi ≥ p and the first len(p) bytes of lo are ≤ p.
      if (cmp(file.hi, p) < 0) return false;
      return file.lo.subarray(0, p.length).compare(p) <= 0;
    }
    default:
      return true; // '!=' and anything else: not worth reasoning about
  }
}

/**
 * A value as a comparable range in the column's order: numbers for numeric, date and timestamp
 * columns (timestamps in ms, widened to whole ms since stats are ms and values may carry µs),
 * UTF-8 bytes for strings (Parquet orders strings bytewise). Undefined when not orderable here.
 * Rounding a long to a double is monotonic, so comparisons stay conservative.
 */
function toRange(raw: unknown, c: ColumnInfo, fromStats: boolean): Range | undefined {
  switch (familyOf(c.type)) {
    case 'integer':
    case 'decimal':
    case 'float': {
      const parsed =
        typeof raw === 'number' ? raw : typeof raw === 'bigint' ? Number(raw) : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
      // A 32-bit float column compares in single precision (the query casts its value to FLOAT),
      // and its stats print the shortest text of the float ("0.7" for 0.699999988…): both
      // rounded to single precision, or 0.70000001 (0.7f once cast) pruned the file holding 0.7f.
      const n = c.type === 'float' ? Math.fround(parsed) : parsed;
      return Number.isFinite(n) ? { lo: n, hi: n } : undefined;
    }
    case 'date': {
      if (typeof raw !== 'string') return undefined;
      const ms = Date.parse(`${raw.slice(0, 10)}T00:00:00Z`);
      return Number.isNaN(ms) ? undefined : { lo: ms, hi: ms };
    }
    case 'timestamp': {
      if (typeof raw !== 'string') return undefined;
      const ms = Date.parse(raw);
      if (Number.isNaN(ms)) return undefined;
      // Date.parse truncates sub-ms digits; such a value lies in [ms, ms + 1).
      const subMs = !fromStats && /\.\d{4,}/.test(raw);
      return { lo: ms, hi: subMs ? ms + 1 : ms };
    }
    case 'string':
      if (typeof raw !== 'string') return undefined;
      return { lo: Buffer.from(raw, 'utf8'), hi: Buffer.from(raw, 'utf8') };
    default:
      return undefined;
  }
}

function cmp(a: Comparable, b: Comparable): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.compare(b);
  return 0;
}

function numberOrUndefined(v: unknown): number | undefined {
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
