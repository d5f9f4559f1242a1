/**
 * Field specs for {@link loadConfig}. Each names its environment variable, how to parse it and
 * whether it is a secret (masked in every description of the config).
 */
export interface FieldSpec<T> {
  readonly env: string;
  readonly secret: boolean;
  readonly doc: string;
  readonly default?: T;
  /**
   * Parses the raw string; returns the value or a message saying what is wrong. A secret's
   * message is shown only when `secretSafe` says it quotes no part of the value.
   */
  parse(raw: string): { ok: true; value: T } | { ok: false; message: string; secretSafe?: boolean };
}

interface Common<T> {
  default?: T;
  doc?: string;
  secret?: boolean;
}

function field<T>(env: string, opts: Common<T>, parse: FieldSpec<T>['parse']): FieldSpec<T> {
  return { env, secret: opts.secret ?? false, doc: opts.doc ?? '', default: opts.default, parse };
}

/**
 * A string; `pattern` restricts it. `noEdgeSpace` refuses whitespace at either end: a credential
 * read from a file with its trailing newline would otherwise fail every request as "denied".
 */
export function str(env: string, opts: Common<string> & { pattern?: RegExp; allowEmpty?: boolean; noEdgeSpace?: boolean } = {}): FieldSpec<string> {
  return field(env, opts, (raw) => {
    if (!opts.allowEmpty && raw.length === 0) return { ok: false, message: 'must not be empty', secretSafe: true };
    if (opts.noEdgeSpace && raw.trim() !== raw) return { ok: false, message: 'must not begin or end with whitespace', secretSafe: true };
    if (opts.pattern && !opts.pattern.test(raw)) return { ok: false, message: `must match ${opts.pattern}` };
    return { ok: true, value: raw };
  });
}

/** An integer in [min, max]. */
export function int(env: string, opts: Common<number> & { min?: number; max?: number } = {}): FieldSpec<number> {
  return field(env, opts, (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) return { ok: false, message: `must be an integer, got "${raw}"` };
    const value = Number(raw);
    if (!Number.isSafeInteger(value)) return { ok: false, message: 'is out of range' };
    if (opts.min !== undefined && value < opts.min) return { ok: false, message: `must be ≥ ${opts.min}` };
    if (opts.max !== undefined && value > opts.max) return { ok: false, message: `must be ≤ ${opts.max}` };
    return { ok: true, value };
  });
}

/** Longest delay a Node timer takes (2^31 − 1 ms, ~24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;
/** librdkafka's largest `max.poll.interval.ms` (24 h). */
export const MAX_POLL_INTERVAL_MS = 86_400_000;
/** The services' consumers set `max.poll.interval.ms` to their stall timeout plus this. */
export const STALL_TO_POLL_INTERVAL_MS = 30_000;
/** librdkafka's largest `session.timeout.ms` (1 h). */
export const MAX_SESSION_TIMEOUT_MS = 3_600_000;

/**
 * A duration in milliseconds that becomes a timer or a librdkafka setting (both 32-bit): an
 * integer in [min, max], max at most {@link MAX_TIMER_MS}. Node runs a longer `setTimeout` after
 * 1 ms, so a value meant as "practically never" would make the timer fire at once, every time.
 */
export function timerMs(env: string, opts: Common<number> & { min?: number; max?: number } = {}): FieldSpec<number> {
  return int(env, { ...opts, max: Math.min(opts.max ?? MAX_TIMER_MS, MAX_TIMER_MS) });
}

/** `true`/`false`/`1`/`0`. */
export function bool(env: string, opts: Common<boolean> = {}): FieldSpec<boolean> {
  return field(env, opts, (raw) => {
    const v = raw.trim().toLowerCase();
    if (v === 'true' || v === '1') return { ok: true, value: true };
    if (v === 'false' || v === '0') return { ok: true, value: false };
    return { ok: false, message: `must be true or false, got "${raw}"` };
  });
}

/** One of a closed set of words. */
export function oneOf<const T extends string>(env: string, values: readonly T[], opts: Common<T> = {}): FieldSpec<T> {
  return field(env, opts, (raw) =>
    (values as readonly string[]).includes(raw)
      ? { ok: true, value: raw as T }
      : { ok: false, message: `must be one of ${values.join(', ')}, got "${raw}"` },
  );
}

/** Comma-separated non-empty list, each item once (`a,a` is a mistake, not two of a). */
export function list(env: string, opts: Common<string[]> = {}): FieldSpec<string[]> {
  return field(env, opts, (raw) => {
    const items = raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    if (items.length === 0) return { ok: false, message: 'must list at least one item' };
    const repeated = items.find((item, i) => items.indexOf(item) !== i);
    if (repeated !== undefined) return { ok: false, message: `lists "${repeated}" more than once` };
    return { ok: true, value: items };
  });
}

/** An http(s) URL; empty allowed with `allowEmpty` (the feature it configures is then off). */
export function url(env: string, opts: Common<string> & { allowEmpty?: boolean } = {}): FieldSpec<string> {
  return field(env, opts, (raw) => {
    if (raw.length === 0) return opts.allowEmpty ? { ok: true, value: raw } : { ok: false, message: 'must not be empty' };
    const problem = httpUrlProblem(raw);
    return problem === undefined ? { ok: true, value: raw } : { ok: false, message: problem };
  });
}

/** Comma-separated http(s) URLs, each once (as {@link list}, each item as {@link url}). */
export function urls(env: string, opts: Common<string[]> = {}): FieldSpec<string[]> {
  return field(env, opts, (raw) => {
    const items = raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    if (items.length === 0) return { ok: false, message: 'must list at least one URL' };
    for (const [i, item] of items.entries()) {
      const problem = httpUrlProblem(item);
      if (problem !== undefined) return { ok: false, message: `item ${i + 1} ${problem}` };
      if (items.indexOf(item) !== i) return { ok: false, message: `lists item ${i + 1} more than once` };
    }
    return { ok: true, value: items };
  });
}

/** Why `raw` is not an http(s) URL without credentials; undefined when it is. Never echoes the value (a URL may carry credentials). */
function httpUrlProblem(raw: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return 'must be an http(s) URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `must be an http(s) URL, not ${parsed.protocol}`;
  // fetch refuses a URL with credentials in it, at every request, which looks like an outage.
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials (user:password@); fetch refuses such URLs';
  return undefined;
}

/**
 * A JSON document, checked by `check` (which returns an error message or undefined). The
 * check's message is shown even for a secret field (API keys, tokens: without it a typo reads
 * only "is invalid"), so it must never quote a value; a JSON syntax error, whose text quotes the
 * input, stays hidden for secrets.
 */
export function json<T>(env: string, check: (v: unknown) => string | undefined, opts: Common<T> = {}): FieldSpec<T> {
  return field(env, opts, (raw) => {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      return { ok: false, message: `is not valid JSON (${(e as Error).message})` };
    }
    const problem = check(value);
    return problem === undefined ? { ok: true, value: value as T } : { ok: false, message: problem, secretSafe: true };
  });
}
