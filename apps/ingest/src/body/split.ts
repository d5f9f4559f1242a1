/**
 * Splits a request body into the byte ranges of its events without parsing them, so each event
 * keeps its exact bytes (what goes to Kafka) and a bad event fails alone. The scanner tracks
 * strings and bracket depth byte by byte: it also measures nesting depth iteratively, so a deeply
 * nested event is refused before JSON.parse ever recurses into it.
 */

/** One event's bytes in the body, with its position for error reports. */
export interface EventSlice {
  /** 0-based position among the events of the request. */
  index: number;
  /** 1-based line of NDJSON bodies (absent for JSON bodies). */
  line?: number;
  bytes: Buffer;
  /**
   * Deepest bracket nesting seen in the slice (1 for a flat object), where the splitter had to
   * scan anyway (JSON arrays); 0 when not measured (NDJSON lines, Avro).
   */
  depth: number;
}

export type SplitResult = { ok: true; events: EventSlice[] } | { ok: false; reason: string } | { ok: false; tooMany: true; count: number };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;
const COMMA = 0x2c;
const NEWLINE = 0x0a;

/** JSON whitespace (RFC 8259): space, tab, line feed, carriage return. */
export function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/** Nesting depth of `buf[start, end)`; brackets inside strings do not count. */
export function measureDepth(buf: Buffer, start: number, end: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_CURLY || b === OPEN_SQUARE) {
      depth++;
      if (depth > max) max = depth;
    } else if (b === CLOSE_CURLY || b === CLOSE_SQUARE) depth--;
  }
  return max;
}

function trimmed(buf: Buffer, start: number, end: number): [number, number] {
  while (start < end && isSpace(buf[start])) start++;
  while (end > start && isSpace(buf[end - 1])) end--;
  return [start, end];
}

/** NDJSON: one event per non-blank line; `\r\n` accepted. */
export function splitNdjson(buf: Buffer, maxEvents: number): SplitResult {
  const events: EventSlice[] = [];
  let count = 0;
  let lineStart = 0;
  let line = 1;
  while (lineStart <= buf.length) {
    let lineEnd = buf.indexOf(NEWLINE, lineStart);
    if (lineEnd === -1) lineEnd = buf.length;
    const [s, e] = trimmed(buf, lineStart, lineEnd);
    if (e > s) {
      count++;
      // Depth is left to the strict parser here (it stops at the limit): a byte loop in JS over
      // every line cost as much as JSON.parse itself.
      if (count <= maxEvents) events.push({ index: events.length, line, bytes: buf.subarray(s, e), depth: 0 });
    }
    lineStart = lineEnd + 1;
    line++;
  }
  if (count > maxEvents) return { ok: false, tooMany: true, count };
  if (count === 0) return { ok: false, reason: 'the body holds no event' };
  return { ok: true, events };
}

/**
 * JSON: a single value (one event) or a top-level array (a batch). Array elements are cut at
 * top-level commas; a malformed element fails on its own later, but a malformed array frame
 * (unbalanced or mismatched brackets, text after the closing bracket, an unterminated string)
 * fails the body: its element boundaries could not be trusted.
 */
export function splitJson(buf: Buffer, maxEvents: number): SplitResult {
  const [s, e] = trimmed(buf, 0, buf.length);
  if (e === s) return { ok: false, reason: 'the body is empty' };
  if (buf[s] !== OPEN_SQUARE) return { ok: true, events: [{ index: 0, bytes: buf.subarray(s, e), depth: measureDepth(buf, s, e) }] };

  const events: EventSlice[] = [];
  let count = 0;
  /**
   * The brackets open inside the array, innermost last. Each closer must match its opener: with
   * a depth count alone, `[{"a":[1}, B]` hid the comma before B inside element 0, and the
   * indexes of the answer's errors pointed at other events than the client's.
   */
  const open = new BracketStack();
  let maxDepth = 0;
  let inString = false;
  let elementStart = s + 1;
  let closedAt = -1;
  const push = (from: number, to: number, allowEmpty: boolean): string | undefined => {
    const [a, b] = trimmed(buf, from, to);
    if (a === b) return allowEmpty ? undefined : 'empty array element';
    count++;
    if (count <= maxEvents) events.push({ index: events.length, bytes: buf.subarray(a, b), depth: maxDepth });
    return undefined;
  };
  for (let i = s + 1; i < e; i++) {
    const b = buf[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      continue;
    }
    if (b === QUOTE) inString = true;
    else if (b === OPEN_CURLY || b === OPEN_SQUARE) {
      open.push(b);
      if (open.length > maxDepth) maxDepth = open.length;
    } else if (b === CLOSE_CURLY || b === CLOSE_SQUARE) {
      if (open.length === 0) {
        // The array's own closer.
        if (b !== CLOSE_SQUARE) return { ok: false, reason: `unbalanced bracket at byte ${i}` };
        closedAt = i;
        break;
      }
      if (open.pop() !== (b === CLOSE_CURLY ? OPEN_CURLY : OPEN_SQUARE)) return { ok: false, reason: `mismatched bracket at byte ${i}` };
    } else if (b === COMMA && open.length === 0) {
      const problem = push(elementStart, i, false);
      if (problem) return { ok: false, reason: `${problem} before byte ${i}` };
      elementStart = i + 1;
      maxDepth = 0;
    }
  }
  if (closedAt === -1) return { ok: false, reason: inString ? 'unterminated string' : 'the array is not closed' };
  if (closedAt !== e - 1) return { ok: false, reason: `unexpected text after the array at byte ${closedAt + 1}` };
  // `[]` is allowed to end empty; `[1,]` is not.
  const problem = push(elementStart, closedAt, count === 0);
  if (problem) return { ok: false, reason: `${problem} before byte ${closedAt}` };
  if (count > maxEvents) return { ok: false, tooMany: true, count };
  if (count === 0) return { ok: false, reason: 'the batch is empty' };
  return { ok: true, events };
}

/** Avro: the body is one framed event (Confluent or single-object); its bytes go to Kafka as they are. */
export function splitAvro(buf: Buffer): SplitResult {
  if (buf.length === 0) return { ok: false, reason: 'the body is empty' };
  return { ok: true, events: [{ index: 0, bytes: buf, depth: 0 }] };
}

/**
 * The brackets open inside a JSON array, one byte each: with a JS array of numbers, splitting a
 * 16 MiB body of `[` took ~500 MB of heap (outside the body budget); this takes 16–32 MB.
 */
class BracketStack {
  private items = new Uint8Array(64);
  length = 0;

  push(bracket: number): void {
    if (this.length === this.items.length) {
      const grown = new Uint8Array(this.items.length * 2);
      grown.set(this.items);
      this.items = grown;
    }
    this.items[this.length++] = bracket;
  }

  /** The innermost open bracket, removed; undefined when none is open. */
  pop(): number | undefined {
    return this.length === 0 ? undefined : this.items[--this.length];
  }
}
