import { queryError } from '../errors';
import type { Scalar } from './query-types';
import { type ColumnInfo, familyOf } from './table-schema';

const INTEGER = /^-?\d{1,20}$/;
const DECIMAL = /^-?\d{1,38}(\.\d{1,38})?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
// ISO-8601 with an explicit zone, so a client can never mean "server local time" by accident.
// Seconds too: DuckDB refuses `2026-01-01T00:00Z`, which Date.parse takes.
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;

const INTEGER_RANGE: Record<string, [bigint, bigint]> = {
  long: [-(2n ** 63n), 2n ** 63n - 1n],
  integer: [-(2n ** 31n), 2n ** 31n - 1n],
  short: [-32768n, 32767n],
  byte: [-128n, 127n],
};

/**
 * Checks a client value against a column type and returns the parameter to bind: integers and
 * decimals as exact decimal strings (no float rounding of longs), floating-point numbers as their
 * shortest decimal text (a whole JS number is bound as BIGINT, so 1e19 failed as out of range),
 * timestamps as ISO strings, others unchanged. Throws QUERY_VALUE_INVALID.
 */
export function normalizeValue(value: Scalar, c: ColumnInfo): Scalar {
  const bad = (why: string) =>
    queryError('QUERY_VALUE_INVALID', `${JSON.stringify(value)} for ${c.name} (${c.type}): ${why}`, { column: c.name });
  switch (familyOf(c.type)) {
    case 'integer': {
      // A JSON number past 2^53 has already lost digits (9007199254740993 arrives as …992).
      if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw bad('past ±2^53 a JSON number loses digits: send the integer as a string');
      }
      const text = typeof value === 'number' ? (Number.isInteger(value) ? BigInt(value).toString() : '') : typeof value === 'string' ? value : '';
      if (!INTEGER.test(text)) throw bad('expected an integer');
      const n = BigInt(text);
      const [lo, hi] = INTEGER_RANGE[c.type];
      if (n < lo || n > hi) throw bad('out of range');
      return n.toString();
    }
    case 'decimal': {
      const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : typeof value === 'string' ? value : '';
      if (typeof value === 'number' && /e/i.test(text)) throw bad('expected a decimal number without an exponent: send it as a string, e.g. "0.0000001"');
      if (!DECIMAL.test(text)) throw bad('expected a decimal number');
      // DuckDB's cast rounds digits beyond the scale (1.239 is 1.24 in DECIMAL(10,2), so
      // `<= 1.239` matched 1.24) and fails past the precision: both refused here.
      const [precision, scale] = decimalShape(c.type);
      // A JSON number is a double, exact to 15 significant digits: past them the number read may
      // not be the one sent (1.0000000000000001 arrives as 1, 12345678901234567891 as …7000),
      // and no check here can tell. Within a precision of 15 a value with more digits is refused
      // anyway (below); a wider column takes its decimals as strings.
      if (typeof value === 'number' && precision > 15) {
        throw bad(`a JSON number holds 15 significant digits, this column up to ${precision}: send the decimal as a string`);
      }
      const [whole, fraction = ''] = text.replace('-', '').split('.');
      if (fraction.replace(/0+$/, '').length > scale) throw bad(`more than ${scale} decimal places`);
      if (whole.replace(/^0+/, '').length > precision - scale) throw bad(`more than ${precision - scale} digits before the point`);
      return text;
    }
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw bad('expected a finite number');
      // Past the largest 32-bit float once rounded to one (3.4028235e38, as a float prints, is in
      // range): DuckDB's cast makes it inf and the comparison matches what it should not.
      if (c.type === 'float' && !Number.isFinite(Math.fround(value))) throw bad('out of range of a 32-bit float');
      return String(value);
    case 'string':
      if (typeof value === 'string') return value;
      throw bad('expected a string');
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw bad('expected true or false');
    case 'date':
      if (typeof value === 'string' && DATE.test(value) && realDay(value)) return value;
      throw bad('expected YYYY-MM-DD');
    case 'timestamp':
      if (typeof value === 'string' && TIMESTAMP.test(value) && realDay(value) && !Number.isNaN(Date.parse(value))) return value;
      throw bad('expected an ISO-8601 timestamp with a zone (e.g. 2026-01-01T00:00:00Z)');
    default:
      throw bad('nested columns cannot be compared');
  }
}

/** Precision and scale of a Delta `decimal(p,s)` type (Delta's default decimal is (10,0)). */
function decimalShape(type: string): [number, number] {
  const m = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  return m ? [Number(m[1]), Number(m[2])] : [10, 0];
}

/** True when the leading YYYY-MM-DD is a calendar day (Date.parse and DuckDB both roll 02-31 over). */
function realDay(text: string): boolean {
  const [y, m, d] = text.slice(0, 10).split('-').map(Number);
  // setUTCFullYear, not Date.UTC: that maps years 0–99 to 1900–1999 and refused 0050-01-01.
  const day = new Date(0);
  day.setUTCFullYear(y, m - 1, d);
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}
