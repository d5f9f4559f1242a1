import { issue, MAX_ISSUES, type Issue, type ReasonCode, type Result } from '../reasons';

/** A parsed JSON value. Objects are plain objects whose keys were checked (no `__proto__`). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Limits of {@link parseStrictJson}. */
export interface StrictJsonOptions {
  /** Deepest allowed nesting of arrays and objects (the top-level value is depth 1). */
  readonly maxDepth?: number;
  /**
   * The caller vouches that the text holds no lone surrogate (e.g. it came from a fatal UTF-8
   * decoder, which cannot produce one), so the clean path need not look; escapes are still checked.
   */
  readonly wellFormed?: boolean;
}

/** Default nesting limit: contracts nest 3 deep; 32 leaves room and stops stack exhaustion. */
export const DEFAULT_MAX_DEPTH = 32;

/** Longest key segment of an issue's pointer; longer keys are clipped with `…`. */
const MAX_POINTER_SEGMENT_CHARS = 256;

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const CONTROL_CHAR = /[\u0000-\u001f]/;
// With the `u` flag a surrogate range matches only unpaired surrogates: paired ones are one code point.
const LONE_SURROGATE = /[\ud800-\udfff]/u;
const LONE_SURROGATES = /[\ud800-\udfff]/gu;

class NotJson extends Error {}

/** Thrown inside the parser to stop at once; caught by parseStrictJson, never escapes it. */
class TooDeep extends Error {}

/**
 * Parses JSON text strictly, never throwing: besides syntax it rejects duplicate keys (which
 * `JSON.parse` resolves silently, last one wins), the keys `__proto__`, `constructor` and
 * `prototype`, integers beyond 2^53 (which `JSON.parse` rounds), numbers that overflow to
 * Infinity, lone UTF-16 surrogates, and nesting deeper than `maxDepth`. Syntax errors yield one
 * `EVENT_NOT_JSON` issue; the other problems are all collected with their paths.
 */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): Result<JsonValue> {
  const parsed = parseJsonCollecting(text, options);
  return parsed.issues.length === 0 ? { ok: true, value: parsed.value as JsonValue } : { ok: false, issues: parsed.issues };
}

/**
 * Fast path of {@link parseJsonCollecting} for the common, clean event: the engine's
 * `JSON.parse`, then a proof from the parsed value that the strict parser would find nothing
 * more. Returns undefined whenever that is not proven, and the caller falls back to the strict
 * parser for the exact issues:
 * - a backslash or a lone surrogate anywhere (escapes make text and value strings differ);
 * - a number that is not finite or an integer beyond 2^53 (JSON.parse rounded it);
 * - a number literal that might not be an integer yet read as one (see {@link mayReadAsInteger});
 * - nesting beyond `maxDepth`;
 * - a key `__proto__`, `constructor` or `prototype`;
 * - a duplicate key: with no escapes, every `:` of the text is either inside a key or string of
 *   the value, or ends one key; so (colons in the text) − (colons in the value's strings) equals
 *   the value's key count exactly when no key was repeated (a repeat drops a key and its colon).
 */
export function parseCleanJson(text: string, maxDepth: number, wellFormed = false): JsonValue | undefined {
  if (text.indexOf('\\') >= 0 || (!wellFormed && !isWellFormed(text))) return undefined;
  if (mayReadAsInteger(text)) return undefined;
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
  let colons = 0;
  for (let i = text.indexOf(':'); i >= 0; i = text.indexOf(':', i + 1)) colons++;
  const tally: Tally = { keys: 0, colons: 0, unclean: false };
  walk(value, 1, maxDepth, tally);
  return !tally.unclean && colons - tally.colons === tally.keys ? value : undefined;
}

/**
 * Whether `text` may hold a number literal that is not an integer but reads as one
 * (1999.9999999999999999 is 2000, 1e-400 is 0). That takes a point or an exponent with 16 or more
 * digits before it (a literal of at most 15 digits lies further from any integer than half a
 * double's spacing there), or an exponent below -99 (underflow); without a point only a negative
 * exponent makes a fraction (a larger integer than 2^53 is caught as unsafe). So it looks only
 * around each `.` and `-`, rare characters: a regular expression over every position, or a
 * search for `e-` (each key has an `e` or two), cost from a seventh to half of JSON.parse. The
 * same characters inside strings only send the text to the strict parser.
 */
function mayReadAsInteger(text: string): boolean {
  for (let i = text.indexOf('.'); i >= 0; i = text.indexOf('.', i + 1)) {
    if (digitsBefore(text, i) + digitsAfter(text, i + 1) >= 16) return true;
  }
  for (let i = text.indexOf('-'); i >= 0; i = text.indexOf('-', i + 1)) {
    const e = text.charCodeAt(i - 1);
    if (e !== 0x65 && e !== 0x45) continue; // not an exponent's e- or E-
    const before = digitsBefore(text, i - 1); // a point before them was counted above
    if (before === 0) continue;
    const after = digitsAfter(text, i + 1);
    // A number ends where JSON lets one end: "9f0e-583a" in a UUID (one in eight has such a
    // run) is no exponent, and sent a tenth of such events to the strict parser.
    if ((before >= 16 || after >= 3) && endsNumber(text, i + 1 + after)) return true;
  }
  return false;
}

/** Whether a number literal may end at `at`: the end of the text, `,`, `}`, `]` or JSON whitespace. */
function endsNumber(text: string, at: number): boolean {
  if (at >= text.length) return true;
  const c = text.charCodeAt(at);
  return c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function digitsBefore(text: string, end: number): number {
  let i = end;
  while (i > 0 && isDigit(text.charCodeAt(i - 1))) i--;
  return end - i;
}

function digitsAfter(text: string, start: number): number {
  let i = start;
  while (i < text.length && isDigit(text.charCodeAt(i))) i++;
  return i - start;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** `String.prototype.isWellFormed` (ES2024, in Node ≥ 20; the workspace's type lib is ES2023). */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

interface Tally {
  keys: number;
  colons: number;
  unclean: boolean;
}

function countColons(s: string): number {
  let n = 0;
  for (let i = s.indexOf(':'); i >= 0; i = s.indexOf(':', i + 1)) n++;
  return n;
}

function walk(value: JsonValue, depth: number, maxDepth: number, tally: Tally): void {
  if (typeof value === 'string') {
    tally.colons += countColons(value);
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) tally.unclean = true;
  } else if (typeof value === 'object' && value !== null) {
    if (depth > maxDepth) {
      tally.unclean = true;
    } else if (Array.isArray(value)) {
      for (const item of value) walk(item, depth + 1, maxDepth, tally);
    } else {
      for (const key in value) {
        if (key === '__proto__' || key === 'constructor' || key === 'prototype') tally.unclean = true;
        tally.keys++;
        tally.colons += countColons(key);
        walk(value[key], depth + 1, maxDepth, tally);
      }
    }
  }
}

/**
 * Like {@link parseStrictJson} but also hands back the value when the text is well-formed and
 * only has semantic issues (duplicate or forbidden keys, unsafe numbers), so a validator can go
 * on and report every other issue too. The value keeps the first of duplicate keys, drops
 * forbidden keys and has NaN where a number was unsafe. `value` is undefined on syntax errors.
 */
export function parseJsonCollecting(text: string, options: StrictJsonOptions = {}): { value: JsonValue | undefined; issues: Issue[] } {
  const clean = parseCleanJson(text, options.maxDepth ?? DEFAULT_MAX_DEPTH, options.wellFormed);
  if (clean !== undefined) return { value: clean, issues: [] };
  const parser = new Parser(text, options.maxDepth ?? DEFAULT_MAX_DEPTH);
  try {
    parser.skipWhitespace();
    const value = parser.parseValue(1);
    parser.skipWhitespace();
    if (parser.pos !== text.length) throw new NotJson(`unexpected text at offset ${parser.pos}`);
    return { value, issues: parser.issues };
  } catch (err) {
    if (err instanceof TooDeep) {
      return { value: undefined, issues: [issue('EVENT_TOO_DEEP', parser.pointer(), `nesting deeper than ${parser.maxDepth}`)] };
    }
    if (err instanceof NotJson) return { value: undefined, issues: [issue('EVENT_NOT_JSON', '', err.message)] };
    // A RangeError from the engine (e.g. a string too long to slice) is still bad input, not a bug.
    return { value: undefined, issues: [issue('EVENT_NOT_JSON', '', `unparseable: ${(err as Error).message}`)] };
  }
}

/** Escapes one JSON-pointer segment (RFC 6901). */
export function pointerSegment(segment: string | number): string {
  return typeof segment === 'number' ? String(segment) : segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

class Parser {
  pos = 0;
  readonly issues: Issue[] = [];
  private readonly path: (string | number)[] = [];
  /**
   * The first backslash at or after the end of the last string read (text.length: none). Strings
   * start later and later, so one search serves every string up to it: searching from each
   * string's start made a text with one escape near its end quadratic (1 MiB of short strings: 3 s).
   */
  private nextBackslash = -1;

  constructor(
    private readonly text: string,
    readonly maxDepth: number,
  ) {}

  /**
   * Where the parser is, as a pointer whose key segments are clipped to
   * {@link MAX_POINTER_SEGMENT_CHARS}: an issue under a huge key must not carry the key whole
   * (thousands of issues under one 100 KB key were gigabytes once their paths were compared).
   */
  pointer(): string {
    let out = '';
    for (const segment of this.path) out += '/' + pointerSegment(typeof segment === 'string' ? clip(segment, MAX_POINTER_SEGMENT_CHARS) : segment);
    return out;
  }

  /** Records an issue at the current position; past {@link MAX_ISSUES} the rest are not kept (decode reports that many). */
  private report(code: ReasonCode, message: string): void {
    if (this.issues.length < MAX_ISSUES) this.issues.push(issue(code, this.pointer(), message));
  }

  skipWhitespace(): void {
    const text = this.text;
    let pos = this.pos;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else break;
    }
    this.pos = pos;
  }

  parseValue(depth: number): JsonValue {
    const c = this.text.charCodeAt(this.pos);
    switch (c) {
      case 0x7b: // {
        return this.parseObject(depth);
      case 0x5b: // [
        return this.parseArray(depth);
      case 0x22: // "
        return this.parseString();
      case 0x74: // t
        return this.literal('true', true);
      case 0x66: // f
        return this.literal('false', false);
      case 0x6e: // n
        return this.literal('null', null);
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.parseNumber();
        throw new NotJson(Number.isNaN(c) ? 'unexpected end of input' : `unexpected character at offset ${this.pos}`);
    }
  }

  private literal<T>(word: string, value: T): T {
    if (!this.text.startsWith(word, this.pos)) throw new NotJson(`invalid literal at offset ${this.pos}`);
    this.pos += word.length;
    return value;
  }

  private parseNumber(): number {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) throw new NotJson(`invalid number at offset ${this.pos}`);
    this.pos += match[0].length;
    const value = Number(match[0]);
    if (!Number.isFinite(value)) {
      this.report('EVENT_NUMBER_UNSAFE', `${clip(match[0])} overflows a double`);
      return NaN;
    }
    if (!Number.isInteger(value)) return value;
    if (match[1] !== undefined || match[2] !== undefined) {
      // A fraction or exponent whose value is no integer, read as one: an integer field would
      // take 2000 for 1999.9999999999999999, 0 for 1e-400, without a word.
      if (!isIntegerLiteral(match[0])) {
        this.report('EVENT_NUMBER_UNSAFE', `${clip(match[0])} is not an integer but reads as ${value}: send fewer digits`);
        return NaN;
      }
      // Past 2^53 only when the double read prints with the digits written (1e23 and
      // 1.1805916207174113e+21, as JS prints 2^70, do; 9007199254740993.0 reads as …992).
      if (Number.isSafeInteger(value) || sameDigits(integerOf(match[0]), value)) return value;
    } else if (Number.isSafeInteger(value)) {
      return value;
    }
    this.report('EVENT_NUMBER_UNSAFE', `${clip(match[0])} is beyond 2^53 and would lose precision`);
    return NaN;
  }

  private parseString(): string {
    const text = this.text;
    const start = this.pos + 1;
    let end = text.indexOf('"', start);
    if (end < 0) throw new NotJson(`unterminated string at offset ${this.pos}`);
    if (this.nextBackslash < start) {
      const found = text.indexOf('\\', start);
      this.nextBackslash = found < 0 ? text.length : found;
    }
    let backslash = this.nextBackslash < text.length ? this.nextBackslash : -1;
    if (backslash < 0 || backslash > end) {
      const raw = text.slice(start, end);
      if (CONTROL_CHAR.test(raw)) throw new NotJson(`control character in string at offset ${start}`);
      this.pos = end + 1;
      return this.wellFormed(raw);
    }
    // Escapes present: find the real closing quote (one not preceded by an odd run of backslashes).
    while (backslash >= 0 && backslash < end) {
      if (backslash === end - 1) {
        // the quote at `end` is escaped; look for the next one
        end = text.indexOf('"', end + 1);
        if (end < 0) throw new NotJson(`unterminated string at offset ${this.pos}`);
      }
      backslash = text.indexOf('\\', backslash + 2);
    }
    // The first backslash past this string's closing quote (the search above went beyond it).
    this.nextBackslash = backslash < 0 ? text.length : backslash;
    const quoted = text.slice(this.pos, end + 1);
    let value: string;
    try {
      value = JSON.parse(quoted) as string;
    } catch {
      throw new NotJson(`invalid string escape at offset ${this.pos}`);
    }
    this.pos = end + 1;
    return this.wellFormed(value);
  }

  private wellFormed(value: string): string {
    if (LONE_SURROGATE.test(value)) {
      this.report('EVENT_NOT_UTF8', 'string holds a lone UTF-16 surrogate');
      return value.replace(LONE_SURROGATES, '\ufffd');
    }
    return value;
  }

  private parseArray(depth: number): JsonValue[] {
    if (depth > this.maxDepth) throw new TooDeep();
    this.pos++;
    const out: JsonValue[] = [];
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return out;
    }
    for (;;) {
      this.path.push(out.length);
      this.skipWhitespace();
      out.push(this.parseValue(depth + 1));
      this.path.pop();
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos++);
      if (c === 0x2c) continue;
      if (c === 0x5d) return out;
      throw new NotJson(`expected , or ] at offset ${this.pos - 1}`);
    }
  }

  private parseObject(depth: number): { [key: string]: JsonValue } {
    if (depth > this.maxDepth) throw new TooDeep();
    this.pos++;
    const out: { [key: string]: JsonValue } = {};
    this.skipWhitespace();
    if (this.text.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return out;
    }
    for (;;) {
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos) !== 0x22) throw new NotJson(`expected a key at offset ${this.pos}`);
      const key = this.parseString();
      this.skipWhitespace();
      if (this.text.charCodeAt(this.pos++) !== 0x3a) throw new NotJson(`expected : at offset ${this.pos - 1}`);
      this.skipWhitespace();
      this.path.push(key);
      const value = this.parseValue(depth + 1);
      if (FORBIDDEN_KEYS.has(key)) {
        this.report('EVENT_FORBIDDEN_KEY', `key "${key}" is not allowed`);
      } else if (Object.prototype.hasOwnProperty.call(out, key)) {
        this.report('EVENT_DUPLICATE_KEY', `key "${clip(key)}" appears more than once`);
      } else {
        out[key] = value;
      }
      this.path.pop();
      this.skipWhitespace();
      const c = this.text.charCodeAt(this.pos++);
      if (c === 0x2c) continue;
      if (c === 0x7d) return out;
      throw new NotJson(`expected , or } at offset ${this.pos - 1}`);
    }
  }
}

/** Keeps messages short when the offending text is huge. */
export function clip(text: string, max = 40): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * Whether `value`'s shortest text (as JS prints it) has the significant digits of `written`: the
 * literal is then the double's own decimal, whatever integer the double is exactly (1e23 is
 * 99999999999999991611392), not one the double only approximates.
 */
function sameDigits(written: bigint, value: number): boolean {
  const significant = (digits: string) => digits.replace(/^-/, '').replace(/0+$/, '');
  return significant(written.toString()) === significant(String(value).replace(/e.*$/, '').replace('.', ''));
}

/** A JSON number literal's sign, whole digits, fraction digits and exponent. */
const NUMBER_PARTS = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/** A number literal as its sign, its digits without the point, and where the point falls among them once the exponent is applied. */
function decimalOf(literal: string): { sign: string; digits: string; point: number } | undefined {
  const m = NUMBER_PARTS.exec(literal);
  if (m === null) return undefined;
  return { sign: m[1], digits: m[2] + (m[3] ?? ''), point: m[2].length + Number(m[4] ?? 0) };
}

/** Whether a JSON number literal's exact decimal value is an integer (every digit past the point is 0). */
function isIntegerLiteral(literal: string): boolean {
  const d = decimalOf(literal);
  if (d === undefined) return false;
  for (let i = Math.max(0, d.point); i < d.digits.length; i++) if (d.digits[i] !== '0') return false;
  return true;
}

/**
 * The integer an integer literal ({@link isIntegerLiteral}) writes, for one that reads as a double
 * past 2^53: its digits past leading zeros are then at most ~309, so the text built is bounded
 * (`0e999999999` reads as 0 and never gets here).
 */
function integerOf(literal: string): bigint {
  const { sign, digits, point } = decimalOf(literal)!;
  const whole = point <= 0 ? '0' : point >= digits.length ? digits + '0'.repeat(point - digits.length) : digits.slice(0, point);
  return BigInt(sign + whole);
}
