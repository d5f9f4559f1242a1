import type { AvroField, AvroSchema } from '../avro/schema';
import { DEFAULT_MAX_STRING_LENGTH, type FieldRule } from '../contract';
import { clip, pointerSegment } from '../json/strict-json';
import { issue, type Issue } from '../reasons';
import { MAX_TIMESTAMP_MS, parseIsoMillis } from './timestamps';

/**
 * How values arrive. `json`: from producers' JSON, timestamps are ISO-8601 strings.
 * `typed`: already in the internal representation (decoded Avro), timestamps are epoch ms.
 */
export type InputMode = 'json' | 'typed';

/**
 * A compiled checker for one schema: returns the value in internal representation (objects
 * rebuilt in schema order, defaults filled, timestamps as epoch ms) and pushes every issue found
 * into `issues`. Never throws on input.
 */
export type Checker = (value: unknown, pointer: string, issues: Issue[]) => unknown;

const INT_MIN = -2147483648;
const INT_MAX = 2147483647;
/** The largest long avsc encodes (its `isSafeLong`): 2^53 − 2. Beyond it validate's Avro step failed after the checks passed. */
const LONG_MAX = 9007199254740990;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Keys the checker lets through at the top level without reporting them (routing fields). */
export interface CompileOptions {
  readonly mode: InputMode;
  readonly rules: readonly FieldRule[];
  readonly ignoreTopLevel?: readonly string[];
}

/** Compiles a record schema and its field rules into a {@link Checker}. */
export function compileChecker(schema: AvroSchema, options: CompileOptions): Checker {
  const rules = new Map(options.rules.map((r) => [r.path, r]));
  return compileNode(schema, '', rules, options.mode, new Set(options.ignoreTopLevel ?? []));
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string "${clip(value)}"`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

function mismatch(issues: Issue[], pointer: string, expected: string, value: unknown): undefined {
  issues.push(issue('EVENT_SCHEMA_MISMATCH', pointer, `expected ${expected}, got ${describe(value)}`));
  return undefined;
}

function compileNode(
  schema: AvroSchema,
  dotted: string,
  rules: Map<string, FieldRule>,
  mode: InputMode,
  ignoreTopLevel: Set<string>,
): Checker {
  const rule = rules.get(dotted);
  if (typeof schema === 'string') {
    switch (schema) {
      case 'null':
        return (v, p, issues) => (v === null ? null : mismatch(issues, p, 'null', v));
      case 'boolean':
        return (v, p, issues) => (typeof v === 'boolean' ? v : mismatch(issues, p, 'a boolean', v));
      case 'int':
        return numberChecker('an int', (n) => Number.isInteger(n) && n >= INT_MIN && n <= INT_MAX, rule);
      case 'long':
        return numberChecker('a long (integer within ±(2^53 − 2))', (n) => Number.isInteger(n) && Math.abs(n) <= LONG_MAX, rule);
      case 'float':
      case 'double':
        return numberChecker('a finite number', Number.isFinite, rule);
      case 'string':
        return stringChecker(rule);
    }
  }
  if (Array.isArray(schema)) {
    const inner = compileNode(schema[1] as AvroSchema, dotted, rules, mode, ignoreTopLevel);
    return (v, p, issues) => (v === null ? null : inner(v, p, issues));
  }
  const complex = schema as Exclude<AvroSchema, string | readonly unknown[]>;
  switch (complex.type) {
    case 'long':
      return timestampChecker(mode);
    case 'enum': {
      const symbols = new Set(complex.symbols);
      const list = complex.symbols.join(', ');
      return (v, p, issues) => {
        if (typeof v !== 'string') return mismatch(issues, p, `one of ${list}`, v);
        if (symbols.has(v)) return v;
        issues.push(issue('RULE_ENUM', p, `"${clip(v)}" is not one of ${list}`));
        return undefined;
      };
    }
    case 'array': {
      const items = compileNode(complex.items, `${dotted}[]`, rules, mode, ignoreTopLevel);
      return (v, p, issues) => {
        if (!Array.isArray(v)) return mismatch(issues, p, 'an array', v);
        if (rule !== undefined) checkLength(v.length, rule, p, issues, 'items');
        return v.map((item, i) => items(item, `${p}/${i}`, issues));
      };
    }
    case 'map': {
      const values = compileNode(complex.values, `${dotted}{}`, rules, mode, ignoreTopLevel);
      return (v, p, issues) => {
        if (!isPlainObject(v)) return mismatch(issues, p, 'an object', v);
        const out: Record<string, unknown> = {};
        for (const key of Object.keys(v)) {
          const at = `${p}/${pointerSegment(key)}`;
          if (FORBIDDEN_KEYS.has(key)) issues.push(issue('EVENT_FORBIDDEN_KEY', at, `key "${key}" is not allowed`));
          else out[key] = values(v[key], at, issues);
        }
        return out;
      };
    }
    case 'record':
      return recordChecker(complex.fields, dotted, rules, mode, dotted === '' ? ignoreTopLevel : new Set());
  }
  throw new Error(`unsupported schema: ${JSON.stringify(schema)}`);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

interface CompiledField {
  readonly name: string;
  readonly segment: string;
  /** The field's full pointer when its record sits at a fixed place (not inside an array or map). */
  readonly pointer: string | undefined;
  readonly check: Checker;
  readonly hasDefault: boolean;
  readonly defaultValue: unknown;
}

function recordChecker(
  fields: readonly AvroField[],
  dotted: string,
  rules: Map<string, FieldRule>,
  mode: InputMode,
  ignore: Set<string>,
): Checker {
  // Records reached only through fields have a fixed pointer: precompute the fields' pointers so
  // valid events build no strings. (`[]`/`{}` in the dotted path mean a dynamic position.)
  const fixed = !dotted.includes('[]') && !dotted.includes('{}');
  const base = dotted === '' ? '' : '/' + dotted.split('.').map(pointerSegment).join('/');
  const compiled: CompiledField[] = fields.map((f) => ({
    name: f.name,
    segment: '/' + pointerSegment(f.name),
    pointer: fixed ? `${base}/${pointerSegment(f.name)}` : undefined,
    check: compileNode(f.type, dotted === '' ? f.name : `${dotted}.${f.name}`, rules, mode, ignore),
    hasDefault: Object.prototype.hasOwnProperty.call(f, 'default'),
    defaultValue: f.default,
  }));
  const known = new Set(fields.map((f) => f.name));
  const unknownKeys = (v: Record<string, unknown>, p: string, issues: Issue[]): void => {
    for (const key of Object.keys(v)) {
      if (known.has(key) || ignore.has(key)) continue;
      const at = `${p}/${pointerSegment(key)}`;
      if (FORBIDDEN_KEYS.has(key)) issues.push(issue('EVENT_FORBIDDEN_KEY', at, `key "${key}" is not allowed`));
      else issues.push(issue('EVENT_FIELD_UNKNOWN', at, `field "${clip(key)}" is not in this schema version`));
    }
  };
  const missing = (i: number, p: string, issues: Issue[]): unknown => {
    const f = compiled[i];
    if (f.hasDefault) return f.defaultValue;
    issues.push(issue('EVENT_FIELD_MISSING', f.pointer ?? p + f.segment, `required field "${f.name}" is missing`));
    return undefined;
  };
  return generateRecordChecker(compiled, { isPlainObject, mismatch, missing, unknownKeys });
}

interface RecordHelpers {
  readonly isPlainObject: (v: unknown) => v is Record<string, unknown>;
  readonly mismatch: typeof mismatch;
  /** The value of an absent field (its default), or undefined after reporting it missing. */
  readonly missing: (field: number, p: string, issues: Issue[]) => unknown;
  /** Reports every key of `v` that is neither a field nor ignored. */
  readonly unknownKeys: (v: Record<string, unknown>, p: string, issues: Issue[]) => void;
}

/**
 * The record checker as generated code, as avsc does for its codecs: one straight-line function
 * per record that reads each field by a constant name, calls that field's checker directly and
 * returns one object literal in schema order. The generic loop it replaces made every property
 * access a keyed lookup by a varying name and gave each output object its own chain of hidden
 * classes; the generated one checks an orders event in about half the time (same-process A/B). Names enter the code only as
 * `JSON.stringify` literals (a JSON string is a valid JS string literal), so do the precomputed
 * pointers; checkers and helpers come in as arguments. Nothing from a schema is evaluated as code.
 */
function generateRecordChecker(compiled: readonly CompiledField[], helpers: RecordHelpers): Checker {
  const lines: string[] = [
    'return function checkRecord(v, p, issues) {',
    '  if (!h.isPlainObject(v)) return h.mismatch(issues, p, "an object", v);',
    '  let present = 0;',
    '  let raw;',
  ];
  compiled.forEach((f, i) => {
    const name = JSON.stringify(f.name);
    const at = f.pointer === undefined ? `p + ${JSON.stringify(f.segment)}` : JSON.stringify(f.pointer);
    lines.push(
      `  raw = v[${name}];`,
      `  let f${i};`,
      `  if (raw === undefined || !hasOwn.call(v, ${name})) f${i} = h.missing(${i}, p, issues);`,
      `  else { present++; f${i} = c${i}(raw, ${at}, issues); }`,
    );
  });
  // Unknown keys: only look when the object has more keys than the fields it matched.
  lines.push('  if (Object.keys(v).length !== present) h.unknownKeys(v, p, issues);');
  // `"__proto__": x` in a literal would set the prototype; the computed form defines an own key.
  const entries = compiled.map((f, i) => (f.name === '__proto__' ? `[${JSON.stringify(f.name)}]: f${i}` : `${JSON.stringify(f.name)}: f${i}`));
  lines.push(`  return { ${entries.join(', ')} };`, '};');
  const checks = compiled.map((f) => f.check);
  const factory = new Function('h', 'hasOwn', ...checks.map((_, i) => `c${i}`), lines.join('\n')) as (...args: unknown[]) => Checker;
  return factory(helpers, Object.prototype.hasOwnProperty, ...checks);
}

function numberChecker(expected: string, accepts: (n: number) => boolean, rule: FieldRule | undefined): Checker {
  const min = rule?.min;
  const max = rule?.max;
  return (v, p, issues) => {
    if (typeof v !== 'number') return mismatch(issues, p, expected, v);
    if (!Number.isFinite(v)) {
      issues.push(issue('EVENT_NUMBER_UNSAFE', p, `${v} is not a finite number`));
      return undefined;
    }
    if (!accepts(v)) {
      if (Number.isInteger(v) && Math.abs(v) > LONG_MAX) {
        issues.push(issue('EVENT_NUMBER_UNSAFE', p, `${v} is beyond ±(2^53 − 2), the largest integer carried exactly`));
        return undefined;
      }
      return mismatch(issues, p, expected, v);
    }
    if ((min !== undefined && v < min) || (max !== undefined && v > max)) {
      issues.push(issue('RULE_RANGE', p, `${v} is outside [${min ?? '-∞'}, ${max ?? '∞'}]`));
      return undefined;
    }
    return v;
  };
}

function checkLength(length: number, rule: FieldRule, p: string, issues: Issue[], unit: string): boolean {
  const min = rule.minLength ?? 0;
  const max = rule.maxLength ?? DEFAULT_MAX_STRING_LENGTH;
  if (length < min || length > max) {
    issues.push(issue('RULE_LENGTH', p, `${length} ${unit}, allowed ${min}..${max}`));
    return false;
  }
  return true;
}

function stringChecker(rule: FieldRule | undefined): Checker {
  const effective: FieldRule = rule ?? { path: '' };
  const pattern = rule?.pattern;
  const patternText = rule?.patternDescription ?? String(pattern);
  return (v, p, issues) => {
    if (typeof v !== 'string') return mismatch(issues, p, 'a string', v);
    if (!checkLength(v.length, effective, p, issues, 'characters')) return undefined;
    if (pattern !== undefined && !pattern.test(v)) {
      issues.push(issue('RULE_PATTERN', p, `"${clip(v)}" is not ${patternText}`));
      return undefined;
    }
    return v;
  };
}

function timestampChecker(mode: InputMode): Checker {
  if (mode === 'typed') {
    return (v, p, issues) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) return mismatch(issues, p, 'epoch milliseconds', v);
      if (v < 0) {
        issues.push(issue('RULE_TIMESTAMP_FORMAT', p, `${v} is before 1970`));
        return undefined;
      }
      // The ISO form stops at year 9999; typed values get the same span, so whether an event
      // arrived as JSON or as Avro never decides whether it is valid.
      if (v > MAX_TIMESTAMP_MS) {
        issues.push(issue('RULE_TIMESTAMP_FORMAT', p, `${v} is after 9999-12-31T23:59:59.999Z`));
        return undefined;
      }
      return v;
    };
  }
  return (v, p, issues) => {
    if (typeof v !== 'string') return mismatch(issues, p, 'an ISO-8601 timestamp string', v);
    const ms = v.length <= 64 ? parseIsoMillis(v) : undefined;
    if (ms === undefined) {
      issues.push(issue('RULE_TIMESTAMP_FORMAT', p, `"${clip(v)}" is not an ISO-8601 date-time with zone (e.g. 2026-01-31T12:00:00.000Z)`));
    }
    return ms;
  };
}
