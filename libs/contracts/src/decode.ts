import { AvroDecoder, holdsReplacementChar, resolveValue } from './avro/codec';
import type { AnyContract, Contract } from './contract';
import { CONTRACTS, contractByName, type ContractName } from './contracts';
import { parseJsonCollecting, clip, DEFAULT_MAX_DEPTH } from './json/strict-json';
import { issue, MAX_ISSUES, type Issue, type Result } from './reasons';
import { columnsOf, toRow } from './rows';
import { compileChecker, type Checker, type InputMode } from './validate/compile';

/** Limits the validator applies; every field has a default (see {@link DEFAULT_LIMITS}). */
export interface ValidationLimits {
  /** Largest accepted event, in bytes (UTF-8) for byte input or UTF-16 units for strings. */
  readonly maxBytes: number;
  /** Deepest JSON nesting accepted. */
  readonly maxDepth: number;
  /** How far event_time may lie in the future (producer clock skew), ms. */
  readonly maxFutureSkewMs: number;
  /** How far event_time may lie in the past, ms (default: the valid topics' retention, the window a replay can reach). */
  readonly maxAgeMs: number;
}

/**
 * Default limits: 1 MiB, depth 32, 5 minutes of clock skew, 7 days of age. ingest and validate
 * take the two time limits from EVENT_MAX_FUTURE_SKEW_MS / EVENT_MAX_AGE_MS, so they agree.
 */
export const DEFAULT_LIMITS: ValidationLimits = Object.freeze({
  maxBytes: 1024 * 1024,
  maxDepth: DEFAULT_MAX_DEPTH,
  maxFutureSkewMs: 5 * 60_000,
  maxAgeMs: 7 * 24 * 3_600_000,
});

/** Options of {@link decodeEvent}. */
export interface DecodeOptions {
  /** Contract name from a header (e.g. Kafka `sluice-contract`, HTTP path); else the body's `contract` field. */
  readonly contract?: string;
  /** "Now" for the timestamp checks, epoch ms (default `Date.now()`); pass it for deterministic runs. */
  readonly now?: number;
  readonly limits?: Partial<ValidationLimits>;
  /** Decoder for Avro input (needed to read Confluent-framed bytes: it holds registry ids). */
  readonly avro?: AvroDecoder;
}

/** The event type a contract's decoders hand out. */
export type EventOf<C> = C extends Contract<infer E> ? E : never;

/** A valid event, typed by its contract: narrow on `name`. */
export type DecodedEvent = {
  [N in ContractName]: {
    readonly ok: true;
    readonly name: N;
    readonly contract: (typeof CONTRACTS)[N];
    readonly event: EventOf<(typeof CONTRACTS)[N]>;
    /** Schema version the producer wrote (`event` is always in the latest version's shape). */
    readonly writerVersion: number;
  };
}[ContractName];

/** Outcome of {@link decodeEvent}: the valid event, or every issue found (contract name when known). */
export type DecodeResult = DecodedEvent | { readonly ok: false; readonly contract?: string; readonly issues: Issue[] };

/** The routing field a JSON event may carry when no contract header is given; not part of the schema. */
export const CONTRACT_FIELD = 'contract';

const checkers = new Map<object, Map<InputMode, Checker>>();

function checkerFor(contract: AnyContract, schema: object, mode: InputMode): Checker {
  let byMode = checkers.get(schema);
  if (byMode === undefined) checkers.set(schema, (byMode = new Map()));
  let checker = byMode.get(mode);
  if (checker === undefined) {
    checker = compileChecker(schema as never, { mode, rules: contract.rules, ignoreTopLevel: mode === 'json' ? [CONTRACT_FIELD] : [] });
    byMode.set(mode, checker);
  }
  return checker;
}

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });
const defaultAvro = new AvroDecoder(Object.values(CONTRACTS));

export { MAX_ISSUES };

function fail(all: Issue[], contract?: string): DecodeResult {
  const issues = all.length <= MAX_ISSUES ? all : all.slice(0, MAX_ISSUES);
  return contract === undefined ? { ok: false, issues } : { ok: false, contract, issues };
}

/**
 * The one entry point for events from outside: JSON bytes, a JSON string, an already-parsed
 * JSON value, or Avro bytes (Confluent or single-object framing, told apart by their first
 * byte, which JSON text never has). Picks the contract (header, else the body's `contract`
 * field), the schema version (`schema_version`), checks schema and rules, and returns the event
 * in the contract's latest shape — or every issue found, each with a reason code and a path.
 * Never throws on input.
 */
export function decodeEvent(input: Uint8Array | string | unknown, options: DecodeOptions = {}): DecodeResult {
  const limits = options.limits === undefined ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, ...options.limits };
  let value: unknown = input;
  let parseIssues: Issue[] = [];
  let wellFormed = false;
  if (input instanceof Uint8Array) {
    if (input.length > limits.maxBytes) return fail([issue('EVENT_TOO_LARGE', '', `${input.length} bytes, limit ${limits.maxBytes}`)], options.contract);
    if (input.length > 0 && (input[0] === 0x00 || input[0] === 0xc3)) return decodeAvroInput(input, options, limits);
    let text: string;
    try {
      text = fatalUtf8.decode(input);
    } catch {
      return fail([issue('EVENT_NOT_UTF8', '', 'bytes are not valid UTF-8')], options.contract);
    }
    value = text;
    wellFormed = true; // a fatal UTF-8 decode yields no lone surrogates
  }
  if (typeof value === 'string') {
    if (value.length > limits.maxBytes) return fail([issue('EVENT_TOO_LARGE', '', `${value.length} characters, limit ${limits.maxBytes}`)], options.contract);
    const parsed = parseJsonCollecting(value, { maxDepth: limits.maxDepth, wellFormed });
    if (parsed.value === undefined) return fail(parsed.issues, options.contract);
    value = parsed.value;
    parseIssues = parsed.issues;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail([issue('EVENT_NOT_OBJECT', '', 'an event is a JSON object')], options.contract);
  }
  const body = value as Record<string, unknown>;
  // A value parsed here is plain data; one handed in by code may be a Proxy or have getters that throw.
  if (value !== input) return checkBody(body, parseIssues, options, limits);
  try {
    return checkBody(body, parseIssues, options, limits);
  } catch (err) {
    return fail([unreadable(err)], options.contract);
  }
}

function checkBody(body: Record<string, unknown>, parseIssues: Issue[], options: DecodeOptions, limits: ValidationLimits): DecodeResult {
  const picked = pickContract(options.contract, body);
  if (!picked.ok) return fail([...parseIssues, ...picked.issues], options.contract);
  const checked = checkEvent(picked.value, body, 'json', options, limits);
  if (parseIssues.length === 0) return checked;
  return fail(mergeIssues(parseIssues, checked.ok ? [] : checked.issues), picked.value.name);
}

/** The issue for an in-process value whose reading threw (a getter, a Proxy trap). */
function unreadable(err: unknown): Issue {
  return issue('EVENT_NOT_OBJECT', '', `the value could not be read as plain data: ${err instanceof Error && typeof err.message === 'string' ? clip(err.message) : 'a non-Error was thrown'}`);
}

/** Parse issues first; a later issue at a path the parser already blamed says nothing new. */
function mergeIssues(parseIssues: Issue[], later: Issue[]): Issue[] {
  const blamed = new Set(parseIssues.map((i) => i.path));
  return [...parseIssues, ...later.filter((i) => !blamed.has(i.path))];
}

/**
 * Checks a value already in internal representation (e.g. built in code or decoded from Avro)
 * against a contract: schema of its `schema_version`, field rules, envelope and timestamp rules.
 */
export function validateEvent<C extends AnyContract>(contract: C, event: unknown, options: Omit<DecodeOptions, 'contract' | 'avro'> = {}): Result<EventOf<C>> {
  const limits = options.limits === undefined ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, ...options.limits };
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    return { ok: false, issues: [issue('EVENT_NOT_OBJECT', '', 'an event is an object')] };
  }
  let result: DecodeResult;
  try {
    result = checkEvent(contract, event as Record<string, unknown>, 'typed', options, limits);
  } catch (err) {
    return { ok: false, issues: [unreadable(err)] };
  }
  return result.ok ? { ok: true, value: result.event as EventOf<C> } : { ok: false, issues: result.issues };
}

function decodeAvroInput(bytes: Uint8Array, options: DecodeOptions, limits: ValidationLimits): DecodeResult {
  const avro = options.avro ?? defaultAvro;
  const decoded = avro.decode(bytes);
  if (!decoded.ok) return fail(decoded.issues, options.contract);
  const { contract, event } = decoded.value;
  // JSON bodies must be valid UTF-8 (EVENT_NOT_UTF8); so must Avro strings, which avsc would
  // otherwise turn into U+FFFD without a word.
  if (holdsReplacementChar(contract.latest.schema, event) && !avro.stringsIntact(bytes)) {
    return fail([issue('EVENT_NOT_UTF8', '', 'a string of the Avro body is not valid UTF-8')], contract.name);
  }
  if (options.contract !== undefined && options.contract !== contract.name) {
    return fail([issue('CONTRACT_MISMATCH', '', `header names "${clip(options.contract)}" but the schema is ${contract.name}'s`)], options.contract);
  }
  if (!contract.acceptsAvro) return fail([issue('AVRO_NOT_ACCEPTED', '', `contract ${contract.name} accepts JSON events only`)], contract.name);
  // Decoded through the latest schema, so its fields are the latest's; rules still apply.
  const checked = checkEvent(contract, event as Record<string, unknown>, 'typed', options, limits, true);
  const versionIssues = writerVersionIssues(contract, decoded.value.writerVersion, event as Record<string, unknown>);
  if (versionIssues.length === 0) return checked;
  return fail([...versionIssues, ...(checked.ok ? [] : checked.issues)], contract.name);
}

/**
 * An Avro event must be written with one of its contract's schema versions, and hold nothing its
 * `schema_version` does not declare (invariant 4), as a JSON event must. Reading goes through the
 * latest schema, which quietly drops what a writer has beyond it: a registry schema outside the
 * repository's history (a producer's own "v3", registered under the subject by its serializer)
 * would lose its new fields without a word. A body written with another version's schema than
 * it declares is accepted when the fields beyond the declared version are null: validate writes
 * every valid event so (the latest schema, the producer's `schema_version`), and a dead letter of
 * merge-compaction's replayed to raw comes back in that form. A value in such a field is
 * EVENT_FIELD_UNKNOWN, and an undeclared version SCHEMA_VERSION_UNKNOWN, as for JSON.
 */
function writerVersionIssues(contract: AnyContract, writerVersion: number | undefined, event: Record<string, unknown>): Issue[] {
  const versions = () => contract.versions.map((v) => v.version).join(', ');
  if (writerVersion === undefined) {
    return [issue('SCHEMA_VERSION_UNKNOWN', '', `the Avro writer schema is none of ${contract.name}'s versions (${versions()}); fields it adds would be lost`)];
  }
  const declared = event.schema_version;
  if (declared === writerVersion || typeof declared !== 'number') return [];
  const version = contract.versions.find((v) => v.version === declared);
  if (version === undefined) return [issue('SCHEMA_VERSION_UNKNOWN', '/schema_version', `${contract.name} has versions ${versions()}, not ${declared}`)];
  const declaredColumns = new Set(columnsOf(contract, version.schema).map((c) => c.name));
  const topLevel = new Set(contract.latest.schema.fields.map((f) => f.name));
  const row = toRow(contract, event);
  return columnsOf(contract)
    .filter((c) => !declaredColumns.has(c.name) && row[c.name] !== null && row[c.name] !== undefined)
    .map((c) => issue('EVENT_FIELD_UNKNOWN', topLevel.has(c.name) ? `/${c.name}` : `/payload/${c.name}`, `schema_version ${declared} has no ${c.name} (the body was written with the schema of version ${writerVersion})`));
}

function pickContract(header: string | undefined, body: Record<string, unknown>): Result<AnyContract> {
  const field = Object.prototype.hasOwnProperty.call(body, CONTRACT_FIELD) ? body[CONTRACT_FIELD] : undefined;
  if (field !== undefined && typeof field !== 'string') {
    return { ok: false, issues: [issue('EVENT_SCHEMA_MISMATCH', `/${CONTRACT_FIELD}`, 'the contract field must be a string')] };
  }
  if (header !== undefined && field !== undefined && header !== field) {
    return { ok: false, issues: [issue('CONTRACT_MISMATCH', `/${CONTRACT_FIELD}`, `header names "${clip(header)}", body names "${clip(field)}"`)] };
  }
  const name = header ?? field;
  if (name === undefined) return { ok: false, issues: [issue('CONTRACT_MISSING', '', 'name the contract in a header or in the "contract" field')] };
  const contract = contractByName(name);
  if (contract === undefined) return { ok: false, issues: [issue('CONTRACT_UNKNOWN', '', `no contract named "${clip(name)}"`)] };
  return { ok: true, value: contract };
}

function checkEvent(
  contract: AnyContract,
  body: Record<string, unknown>,
  mode: InputMode,
  options: Omit<DecodeOptions, 'contract' | 'avro'>,
  limits: ValidationLimits,
  alreadyLatest = false,
): DecodeResult {
  const issues: Issue[] = [];
  const declared = body.schema_version;
  let version = alreadyLatest ? contract.latest : contract.versions.find((v) => v.version === declared);
  if (version === undefined) {
    // A non-number schema_version is reported by the checker as a type mismatch; a number that
    // names no version is reported here. Missing: the checker reports the missing field.
    if (typeof declared === 'number') {
      issues.push(issue('SCHEMA_VERSION_UNKNOWN', '/schema_version', `${contract.name} has versions ${contract.versions.map((v) => v.version).join(', ')}, not ${declared}`));
    }
    version = contract.latest; // check against the latest anyway, to report every other issue
  }
  const event = checkerFor(contract, version.schema, mode)(body, '', issues) as Record<string, unknown> | undefined;
  if (event !== undefined) envelopeChecks(contract, event, issues, options.now ?? Date.now(), limits);
  reportMissingKeysAsKeyIssues(contract, issues);
  if (issues.length === 0 && event !== undefined) {
    for (const check of contract.checks) issues.push(...check(event));
  }
  if (issues.length > 0) return fail(issues, contract.name);
  const latest = version === contract.latest ? event : (resolveValue(version.schema, contract.latest.schema, event) as Record<string, unknown>);
  return {
    ok: true,
    name: contract.name as ContractName,
    contract: contract as never,
    event: latest as never,
    writerVersion: typeof declared === 'number' ? declared : version.version,
  };
}

function envelopeChecks(contract: AnyContract, event: Record<string, unknown>, issues: Issue[], now: number, limits: ValidationLimits): void {
  for (const field of contract.keyFields) {
    const key = event[field];
    if (typeof key === 'string' && key.trim() === '') issues.push(issue('RULE_KEY_MISSING', `/${field}`, `entity key field "${field}" is empty`));
  }
  const op = event.op;
  const payload = event.payload;
  if (contract.kind === 'append' && op === 'delete') {
    issues.push(issue('RULE_OP_NOT_ALLOWED', '/op', `${contract.name} is append-only: events cannot be deleted`));
  } else if (op === 'upsert' && payload === null) {
    issues.push(issue('RULE_OP_PAYLOAD', '/payload', 'an upsert needs a payload'));
  } else if (op === 'delete' && payload !== null && payload !== undefined) {
    issues.push(issue('RULE_OP_PAYLOAD', '/payload', 'a delete carries no payload (payload must be null or absent)'));
  }
  const time = event.event_time;
  if (typeof time === 'number') {
    if (time > now + limits.maxFutureSkewMs) {
      issues.push(issue('RULE_TIMESTAMP_FUTURE', '/event_time', `${new Date(time).toISOString()} is more than ${limits.maxFutureSkewMs} ms ahead of ${new Date(now).toISOString()}`));
    } else if (time < now - limits.maxAgeMs) {
      issues.push(issue('RULE_TIMESTAMP_EXPIRED', '/event_time', `${new Date(time).toISOString()} is older than ${limits.maxAgeMs} ms`));
    }
  }
}

/** A missing key field is reported as RULE_KEY_MISSING, the code producers and dashboards look for. */
function reportMissingKeysAsKeyIssues(contract: AnyContract, issues: Issue[]): void {
  for (let i = 0; i < issues.length; i++) {
    const it = issues[i];
    if (it.code === 'EVENT_FIELD_MISSING' && contract.keyFields.some((f) => it.path === `/${f}`)) {
      issues[i] = issue('RULE_KEY_MISSING', it.path, it.message);
    }
  }
}
