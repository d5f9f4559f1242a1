// RFC 3339 / ISO-8601 date-time with a mandatory zone: 2026-11-29T14:58:02.123Z or +01:00.
const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Parses an ISO-8601 / RFC 3339 timestamp with an explicit zone (`Z` or `±hh:mm`) into epoch
 * milliseconds UTC. Fractions finer than a millisecond are truncated (toward the past). Returns
 * undefined for anything else: no zone (ambiguous local time), impossible dates (Feb 30), leap
 * seconds (`:60`), years before 1970 — stricter than `Date.parse`, which guesses.
 */
export function parseIsoMillis(text: string): number | undefined {
  // Fast path for the canonical form producers nearly always send: 2026-06-01T12:00:00.123Z.
  if (text.length === 24 && text.charCodeAt(23) === 0x5a) {
    const fast = parseCanonical(text);
    if (fast !== undefined) return fast;
  }
  const m = ISO.exec(text);
  if (m === null) return undefined;
  const year = +m[1];
  const month = +m[2];
  const day = +m[3];
  const hour = +m[4];
  const minute = +m[5];
  const second = +m[6];
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return undefined;
  if (month === 2 && day === 29 && !isLeapYear(year)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = m[7] === undefined ? 0 : +m[7].slice(0, 3).padEnd(3, '0');
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const offHours = +m[10];
    const offMinutes = +m[11];
    if (offHours > 23 || offMinutes > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offHours * 60 + offMinutes);
  }
  const epoch = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  return epoch >= 0 ? epoch : undefined;
}

const DIGIT_POSITIONS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22];

function digitsAt(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) n = n * 10 + (text.charCodeAt(i) - 0x30);
  return n;
}

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` without a regex; undefined when the text is not exactly that (the regex path decides). */
function parseCanonical(text: string): number | undefined {
  for (const i of DIGIT_POSITIONS) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  if (text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':' || text[19] !== '.') return undefined;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return undefined;
  if (month === 2 && day === 29 && !isLeapYear(year)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second, digitsAt(text, 20, 3));
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Formats epoch milliseconds as ISO-8601 UTC with milliseconds (`2026-11-29T14:58:02.123Z`). */
export function formatIsoMillis(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** The UTC calendar date (`YYYY-MM-DD`) of epoch milliseconds: bronze's `event_date` partition. */
export function utcDate(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}
