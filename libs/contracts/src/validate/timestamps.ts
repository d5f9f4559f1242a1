// RFC 3339 / ISO-8601 date-time with a mandatory zone: 2026-11-29T14:58:02.123Z or +01:00.
// Any number of fraction digits (RFC 3339's `1*DIGIT`; nine was the most read before).
const ISO = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** 9999-12-31T23:59:59.999Z, the last instant the ISO form (four-digit years) can name. */
export const MAX_TIMESTAMP_MS = 253_402_300_799_999;

/**
 * Parses an ISO-8601 / RFC 3339 timestamp with an explicit zone (`Z` or `±hh:mm`) into epoch
 * milliseconds UTC. Fractions finer than a millisecond are truncated (toward the past). Returns
 * undefined for anything else: no zone (ambiguous local time), impossible dates (Feb 30), leap
 * seconds (`:60`), instants before 1970 or after 9999-12-31T23:59:59.999Z (an offset can move
 * a time across either end) — stricter than `Date.parse`, which guesses.
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
  // A negative offset can carry 9999-12-31 past the last instant the ISO form (and a typed
  // value) may name; 1970 is the first.
  return epoch >= 0 && epoch <= MAX_TIMESTAMP_MS ? epoch : undefined;
}

/** The two-digit number at `i`, or -1 when either character is not a digit. */
function twoDigits(text: string, i: number): number {
  const a = text.charCodeAt(i) - 0x30;
  const b = text.charCodeAt(i + 1) - 0x30;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` without a regex; undefined when the text is not exactly that (the regex path decides). */
function parseCanonical(text: string): number | undefined {
  // - - T : : .
  if (text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d || text.charCodeAt(10) !== 0x54 || text.charCodeAt(13) !== 0x3a || text.charCodeAt(16) !== 0x3a || text.charCodeAt(19) !== 0x2e) {
    return undefined;
  }
  const century = twoDigits(text, 0);
  const yearOfCentury = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  const centis = twoDigits(text, 20);
  const lastMilli = text.charCodeAt(22) - 0x30;
  if ((century | yearOfCentury | month | day | hour | minute | second | centis) < 0 || lastMilli < 0 || lastMilli > 9) return undefined;
  const year = century * 100 + yearOfCentury;
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > DAYS_IN_MONTH[month - 1]) return undefined;
  if (month === 2 && day === 29 && !isLeapYear(year)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second, centis * 10 + lastMilli);
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
