import { canonicalForm } from '../avro/fingerprint';
import type { CompatibilityLevel } from '../contract';

/**
 * Client for the Confluent Schema Registry REST API (also served by Karapace, Redpanda and
 * Apicurio's `/apis/ccompat/v7`). contracts may import no HTTP library, so the caller injects a
 * `fetch`-like function (Node's global `fetch` fits); everything else here is pure logic:
 * URLs, caching, retries with backoff, and turning answers into typed results or
 * {@link RegistryError}s.
 */

/** The part of a fetch Response the client reads. */
export interface FetchResponseLike {
  readonly status: number;
  text(): Promise<string>;
}

/** The part of `fetch` the client calls (Node 20's global `fetch` satisfies it). */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<FetchResponseLike>;

/** Closed list of registry error codes; `retryable` tells retry from give-up. */
export const REGISTRY_ERROR_CODES = [
  'REGISTRY_UNAVAILABLE',
  'REGISTRY_TIMEOUT',
  'REGISTRY_SUBJECT_NOT_FOUND',
  'REGISTRY_VERSION_NOT_FOUND',
  'REGISTRY_SCHEMA_NOT_FOUND',
  'REGISTRY_INCOMPATIBLE',
  'REGISTRY_SCHEMA_INVALID',
  'REGISTRY_UNAUTHORIZED',
  'REGISTRY_REQUEST_REJECTED',
  'REGISTRY_BAD_RESPONSE',
] as const;

/** One of {@link REGISTRY_ERROR_CODES}. */
export type RegistryErrorCode = (typeof REGISTRY_ERROR_CODES)[number];

/** An error from the registry or on the way to it. Fields survive `JSON.stringify`. */
export class RegistryError extends Error {
  readonly code: RegistryErrorCode;
  readonly retryable: boolean;
  /** HTTP status, when the registry answered. */
  readonly status: number | undefined;
  /** The registry's own `error_code` (e.g. 40401), when it sent one. */
  readonly registryErrorCode: number | undefined;

  constructor(
    code: RegistryErrorCode,
    message: string,
    options: { retryable?: boolean; status?: number; registryErrorCode?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RegistryError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.status = options.status;
    this.registryErrorCode = options.registryErrorCode;
  }

  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message, retryable: this.retryable, status: this.status, registryErrorCode: this.registryErrorCode };
  }
}

/** Options of {@link createRegistryClient}. */
export interface RegistryClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:18081` (Apicurio: `http://host:8080/apis/ccompat/v7`). */
  readonly url: string;
  readonly fetch: FetchLike;
  /** Retries after the first attempt for transient failures (network, timeout, 5xx, 429). Default 4. */
  readonly retries?: number;
  /** First backoff, ms; doubles per retry with ±50% jitter, capped by `maxBackoffMs`. Default 100. */
  readonly backoffMs?: number;
  /** Largest backoff, ms. Default 3000. */
  readonly maxBackoffMs?: number;
  /** Per-request timeout, ms. Default 10000. */
  readonly timeoutMs?: number;
  /** Basic auth, when the registry wants it. */
  readonly auth?: RegistryAuth;
  /** Waits between retries (tests may pass a fake clock). Default setTimeout. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Jitter source in [0,1). Default Math.random. */
  readonly random?: () => number;
}

/** Basic-auth credentials of a registry (Confluent Cloud: an API key and its secret). */
export interface RegistryAuth {
  readonly username: string;
  readonly password: string;
}

/**
 * Credentials from a service's two settings: none when both are empty, RangeError naming the
 * missing one when only one is set (a registry that wants them would refuse every lookup).
 */
export function registryAuth(username: string, password: string): RegistryAuth | undefined {
  if (username === '' && password === '') return undefined;
  if (username === '') throw new RangeError('SCHEMA_REGISTRY_PASSWORD is set without SCHEMA_REGISTRY_USERNAME');
  if (password === '') throw new RangeError('SCHEMA_REGISTRY_USERNAME is set without SCHEMA_REGISTRY_PASSWORD');
  return { username, password };
}

/** A schema version held by the registry under a subject. */
export interface SubjectVersion {
  readonly subject: string;
  readonly version: number;
  readonly id: number;
  /** The schema as the registry stores it (JSON text). */
  readonly schema: string;
}

/** The answer of a compatibility check; `messages` explain a failure when the registry says why. */
export interface CompatibilityResult {
  readonly compatible: boolean;
  readonly messages: readonly string[];
}

/** Operations of the Confluent Schema Registry API that Sluice uses. */
export interface RegistryClient {
  /** Registers `schema` under `subject` (idempotent: an identical schema returns its existing id). */
  register(subject: string, schema: object | string): Promise<number>;
  /** The schema text of a global id (cached forever: ids are immutable). */
  getSchemaById(id: number): Promise<string>;
  /** One version of a subject (`latest` is never cached). */
  getSubjectVersion(subject: string, version: number | 'latest'): Promise<SubjectVersion>;
  /** The version numbers of a subject, ascending. */
  listVersions(subject: string): Promise<number[]>;
  /** All subjects. */
  listSubjects(): Promise<string[]>;
  /** Finds `schema` under `subject` without registering it; undefined when absent. */
  lookup(subject: string, schema: object | string): Promise<SubjectVersion | undefined>;
  /** Whether `schema` is compatible with `version` (default latest) of `subject` under its level. */
  checkCompatibility(subject: string, schema: object | string, version?: number | 'latest'): Promise<CompatibilityResult>;
  /** The compatibility level of a subject (falls back to the global level), or the global one. */
  getCompatibility(subject?: string): Promise<CompatibilityLevel>;
  /** Sets the compatibility level of a subject, or the global one. */
  setCompatibility(level: CompatibilityLevel, subject?: string): Promise<void>;
  /** Deletes a subject (soft, then `permanent` if asked); returns the versions removed. */
  deleteSubject(subject: string, permanent?: boolean): Promise<number[]>;
}

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** Creates a {@link RegistryClient}. Nothing is sent until a method is called. */
export function createRegistryClient(options: RegistryClientOptions): RegistryClient {
  const base = options.url.replace(/\/+$/, '');
  const retries = options.retries ?? 4;
  const backoffMs = options.backoffMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 3000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const headers: Record<string, string> = { Accept: CONTENT_TYPE, 'Content-Type': CONTENT_TYPE };
  if (options.auth !== undefined) {
    headers.Authorization = `Basic ${Buffer.from(`${options.auth.username}:${options.auth.password}`).toString('base64')}`;
  }

  const schemaById = new Map<number, string>();
  const idBySubjectSchema = new Map<string, number>();
  const versionCache = new Map<string, SubjectVersion>();

  async function attempt(method: string, path: string, body: unknown): Promise<Answer> {
    let response: FetchResponseLike;
    try {
      response = await options.fetch(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
      throw new RegistryError(timedOut ? 'REGISTRY_TIMEOUT' : 'REGISTRY_UNAVAILABLE', `${method} ${path}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
    const text = await response.text().catch(() => '');
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (response.status < 300) throw new RegistryError('REGISTRY_BAD_RESPONSE', `${method} ${path}: answer is not JSON: ${text.slice(0, 200)}`, { status: response.status });
        parsed = { message: text.slice(0, 500) };
      }
    }
    if (response.status >= 200 && response.status < 300) return { status: response.status, body: parsed };
    throw errorFromAnswer(method, path, response.status, parsed);
  }

  async function call(method: string, path: string, body?: unknown): Promise<Answer> {
    for (let attemptNo = 0; ; attemptNo++) {
      try {
        return await attempt(method, path, body);
      } catch (err) {
        if (!(err instanceof RegistryError) || !err.retryable || attemptNo >= retries) throw err;
        const delay = Math.min(maxBackoffMs, backoffMs * 2 ** attemptNo);
        await sleep(delay * (0.5 + random()));
      }
    }
  }

  const schemaText = (schema: object | string) => (typeof schema === 'string' ? schema : JSON.stringify(schema));
  const enc = encodeURIComponent;
  const cacheKey = (subject: string, schema: object | string) => `${subject}\u0000${safeCanonical(schemaText(schema))}`;

  return {
    async register(subject, schema) {
      const key = cacheKey(subject, schema);
      const cached = idBySubjectSchema.get(key);
      if (cached !== undefined) return cached;
      const answer = await call('POST', `/subjects/${enc(subject)}/versions`, { schema: schemaText(schema), schemaType: 'AVRO' });
      const id = field(answer.body, 'id', 'number', 'register');
      idBySubjectSchema.set(key, id);
      return id;
    },

    async getSchemaById(id) {
      const cached = schemaById.get(id);
      if (cached !== undefined) return cached;
      // The Confluent wire format's id is a positive signed 32-bit integer: no registry has more.
      // Confluent's registry cannot route a larger one and answers a bare 404 (no 40403), which
      // reads as a misconfigured URL and is retried: validate retried such an event for ever.
      if (!Number.isSafeInteger(id) || id < 0 || id > MAX_SCHEMA_ID) throw new RegistryError('REGISTRY_SCHEMA_NOT_FOUND', `schema id ${id} is out of range`);
      const answer = await call('GET', `/schemas/ids/${id}`);
      const schema = field(answer.body, 'schema', 'string', 'getSchemaById');
      schemaById.set(id, schema);
      return schema;
    },

    async getSubjectVersion(subject, version) {
      const key = `${subject}\u0000${version}`;
      const cached = version === 'latest' ? undefined : versionCache.get(key);
      if (cached !== undefined) return cached;
      const answer = await call('GET', `/subjects/${enc(subject)}/versions/${version}`);
      const result = subjectVersion(answer.body, subject);
      if (version !== 'latest') versionCache.set(key, result);
      schemaById.set(result.id, result.schema);
      return result;
    },

    async listVersions(subject) {
      const answer = await call('GET', `/subjects/${enc(subject)}/versions`);
      return numberArray(answer.body, 'listVersions');
    },

    async listSubjects() {
      const answer = await call('GET', '/subjects');
      if (!Array.isArray(answer.body) || !answer.body.every((s) => typeof s === 'string')) {
        throw new RegistryError('REGISTRY_BAD_RESPONSE', 'listSubjects: expected an array of strings');
      }
      return answer.body as string[];
    },

    async lookup(subject, schema) {
      try {
        const answer = await call('POST', `/subjects/${enc(subject)}`, { schema: schemaText(schema), schemaType: 'AVRO' });
        return subjectVersion(answer.body, subject);
      } catch (err) {
        if (err instanceof RegistryError && (err.code === 'REGISTRY_SCHEMA_NOT_FOUND' || err.code === 'REGISTRY_SUBJECT_NOT_FOUND')) return undefined;
        throw err;
      }
    },

    async checkCompatibility(subject, schema, version = 'latest') {
      const answer = await call('POST', `/compatibility/subjects/${enc(subject)}/versions/${version}?verbose=true`, {
        schema: schemaText(schema),
        schemaType: 'AVRO',
      });
      const body = answer.body as { is_compatible?: unknown; messages?: unknown; reason?: unknown };
      if (typeof body?.is_compatible !== 'boolean') throw new RegistryError('REGISTRY_BAD_RESPONSE', 'checkCompatibility: no is_compatible in answer');
      // Confluent sends `messages` (verbose=true), as does the test registry (tools/registry adds
      // them to Apicurio 3's answer); Apicurio 2's ccompat sends one `reason` string.
      const messages = Array.isArray(body.messages) ? body.messages.map(String) : typeof body.reason === 'string' ? [body.reason] : [];
      return { compatible: body.is_compatible, messages };
    },

    async getCompatibility(subject) {
      const path = subject === undefined ? '/config' : `/config/${enc(subject)}?defaultToGlobal=true`;
      const answer = await call('GET', path);
      const body = answer.body as { compatibilityLevel?: unknown; compatibility?: unknown };
      const level = body?.compatibilityLevel ?? body?.compatibility;
      if (typeof level !== 'string') throw new RegistryError('REGISTRY_BAD_RESPONSE', 'getCompatibility: no level in answer');
      return level as CompatibilityLevel;
    },

    async setCompatibility(level, subject) {
      const path = subject === undefined ? '/config' : `/config/${enc(subject)}`;
      await call('PUT', path, { compatibility: level });
    },

    async deleteSubject(subject, permanent = false) {
      const answer = await call('DELETE', `/subjects/${enc(subject)}`);
      let removed = numberArray(answer.body, 'deleteSubject');
      if (permanent) removed = numberArray((await call('DELETE', `/subjects/${enc(subject)}?permanent=true`)).body, 'deleteSubject');
      for (const key of [...idBySubjectSchema.keys()]) if (key.startsWith(`${subject}\u0000`)) idBySubjectSchema.delete(key);
      for (const key of [...versionCache.keys()]) if (key.startsWith(`${subject}\u0000`)) versionCache.delete(key);
      return removed;
    },
  };
}

function safeCanonical(text: string): string {
  try {
    return canonicalForm(JSON.parse(text) as object);
  } catch {
    return text; // the registry will say what is wrong with it
  }
}

/** Largest schema id of the Confluent wire format (a signed 32-bit integer). */
const MAX_SCHEMA_ID = 2 ** 31 - 1;

function errorFromAnswer(method: string, path: string, status: number, body: unknown): RegistryError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as { error_code?: unknown; message?: unknown };
  const registryErrorCode = typeof b.error_code === 'number' ? b.error_code : undefined;
  const detail = typeof b.message === 'string' ? b.message : `HTTP ${status}`;
  const message = `${method} ${path}: ${detail}`;
  const common = { status, registryErrorCode };
  if (status >= 500 || status === 429 || status === 408) return new RegistryError('REGISTRY_UNAVAILABLE', message, { ...common, retryable: true });
  if (status === 401 || status === 403) return new RegistryError('REGISTRY_UNAUTHORIZED', message, common);
  if (status === 409) return new RegistryError('REGISTRY_INCOMPATIBLE', message, common);
  if (status === 404) {
    if (registryErrorCode === 40402) return new RegistryError('REGISTRY_VERSION_NOT_FOUND', message, common);
    if (registryErrorCode === 40403) return new RegistryError('REGISTRY_SCHEMA_NOT_FOUND', message, common);
    return new RegistryError('REGISTRY_SUBJECT_NOT_FOUND', message, common);
  }
  if (status === 422 && (registryErrorCode === 42201 || registryErrorCode === undefined)) {
    return new RegistryError('REGISTRY_SCHEMA_INVALID', message, common);
  }
  return new RegistryError('REGISTRY_REQUEST_REJECTED', message, common);
}

function field<T extends 'number' | 'string'>(body: unknown, name: string, type: T, op: string): T extends 'number' ? number : string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (typeof value !== type) throw new RegistryError('REGISTRY_BAD_RESPONSE', `${op}: answer has no ${type} "${name}"`);
  return value as T extends 'number' ? number : string;
}

function subjectVersion(body: unknown, subject: string): SubjectVersion {
  return {
    subject: typeof (body as { subject?: unknown })?.subject === 'string' ? (body as { subject: string }).subject : subject,
    version: field(body, 'version', 'number', 'subject version'),
    id: field(body, 'id', 'number', 'subject version'),
    schema: field(body, 'schema', 'string', 'subject version'),
  };
}

function numberArray(body: unknown, op: string): number[] {
  if (!Array.isArray(body) || !body.every((v) => typeof v === 'number')) throw new RegistryError('REGISTRY_BAD_RESPONSE', `${op}: expected an array of numbers`);
  return body as number[];
}
