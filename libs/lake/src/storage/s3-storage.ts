import { createHash, randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { SluiceError, isSluiceError } from '@sluice/errors';
import { FileLease, type PinnableCache } from './file-lease';
import type { ListOptions, Storage, StoredObject } from './storage';

// ---------------------------------------------------------------------------------------------
// Errors: the one place where AWS SDK / network failures become LAKE_* SluiceErrors.
// ---------------------------------------------------------------------------------------------

/** Codes S3Storage and LocalFileCache raise. `retryable` is set per error, see `translateS3Error`. */
export const S3_STORAGE_ERROR_CODES = [
  /** get() of an absent key. Not retryable. */
  'LAKE_NOT_FOUND',
  /** Network failure, timeout, throttling or a 5xx answer. Retryable. */
  'LAKE_STORAGE_UNAVAILABLE',
  /** 401/403: wrong or missing credentials, or no permission. Not retryable. */
  'LAKE_STORAGE_ACCESS_DENIED',
  /** The bucket does not exist. Not retryable. */
  'LAKE_STORAGE_BUCKET_NOT_FOUND',
  /** Any other 4xx answer (bad request, invalid argument). Not retryable. */
  'LAKE_STORAGE_REQUEST_REJECTED',
  /** A key or prefix that is not a relative '/'-separated path. Not retryable. */
  'LAKE_STORAGE_KEY_INVALID',
  /** The server ignores `If-None-Match: *` on PUT, so commits would be unsafe. Not retryable. */
  'LAKE_STORAGE_CONDITIONAL_PUT_UNSUPPORTED',
  /** A download ended with fewer or more bytes than the object has. Retryable. */
  'LAKE_STORAGE_TRUNCATED',
  /** Invalid S3StorageOptions. Not retryable. */
  'LAKE_STORAGE_OPTIONS_INVALID',
  /** A failure of unknown kind (no HTTP status, not a known network error). Not retryable. */
  'LAKE_STORAGE_FAILED',
] as const;

/** One of `S3_STORAGE_ERROR_CODES`. */
export type S3StorageErrorCode = (typeof S3_STORAGE_ERROR_CODES)[number];

/** Where a failure happened, carried into the error's details. */
export interface S3ErrorContext {
  operation: string;
  uri: string;
  key?: string;
}

// AWS error names that mean "the service is overloaded or hiccuped; the same request may pass".
const RETRYABLE_AWS_NAMES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'TooManyRequestsException',
  'RequestThrottled',
  'RequestThrottledException',
  'RequestLimitExceeded',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'TimeoutError',
]);

// Node/undici error codes of a connection that failed or broke.
const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

const ACCESS_DENIED_NAMES = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'ExpiredToken',
  'Forbidden',
]);

interface AwsLikeError {
  name?: string;
  code?: string;
  message?: string;
  errors?: unknown[];
  cause?: unknown;
  $metadata?: { httpStatusCode?: number; requestId?: string; attempts?: number };
}

function asAwsLike(err: unknown): AwsLikeError {
  return typeof err === 'object' && err !== null ? (err as AwsLikeError) : {};
}

/** True when `err` (or an error it wraps, e.g. an AggregateError of two dial attempts) is a network failure. */
function isNetworkError(err: unknown, depth = 0): boolean {
  if (depth > 3) return false;
  const e = asAwsLike(err);
  if (e.code !== undefined && NETWORK_ERROR_CODES.has(e.code)) return true;
  if (e.name === 'TimeoutError') return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isNetworkError(inner, depth + 1))) return true;
  // The SDK's retry layer re-wraps errors it does not recognise as Error (e.g. from another
  // realm) as "AWS SDK error wrapper for Error: connect ECONNREFUSED …", keeping only the text.
  if (typeof e.message === 'string' && e.message.startsWith('AWS SDK error wrapper for ')) {
    const words = e.message.match(/\b[A-Z][A-Z_]+\b|\bTimeoutError\b/g) ?? [];
    if (words.some((w) => NETWORK_ERROR_CODES.has(w) || w === 'TimeoutError')) return true;
  }
  return e.cause !== undefined && isNetworkError(e.cause, depth + 1);
}

function httpStatus(err: unknown): number | undefined {
  return asAwsLike(err).$metadata?.httpStatusCode;
}

/**
 * Turns anything the AWS SDK (or the socket under it) throws into a SluiceError with a LAKE_* code
 * and a retryable flag: throttling, 5xx, timeouts and network errors are retryable; 4xx are not.
 * SluiceErrors pass through unchanged. The original error is kept as `cause`.
 */
export function translateS3Error(err: unknown, context: S3ErrorContext): SluiceError<S3StorageErrorCode> {
  if (isSluiceError(err)) return err as SluiceError<S3StorageErrorCode>;
  const e = asAwsLike(err);
  const status = httpStatus(err);
  const name = e.name ?? 'Error';
  const details = {
    operation: context.operation,
    uri: context.uri,
    ...(context.key === undefined ? {} : { key: context.key }),
    ...(status === undefined ? {} : { httpStatus: status }),
    awsCode: name,
    ...(e.$metadata?.requestId === undefined ? {} : { requestId: e.$metadata.requestId }),
  };
  const where = `${context.operation} ${context.key === undefined ? context.uri : `${context.uri}/${context.key}`}`;
  const make = (code: S3StorageErrorCode, what: string, retryable: boolean) =>
    new SluiceError<S3StorageErrorCode>(code, `${where}: ${what} (${name}${status === undefined ? '' : ` ${status}`})`, {
      retryable,
      cause: err,
      details,
    });

  if (RETRYABLE_AWS_NAMES.has(name) || status === 429 || (status !== undefined && status >= 500)) {
    return make('LAKE_STORAGE_UNAVAILABLE', 'object store busy or failing', true);
  }
  if (status === undefined && isNetworkError(err)) {
    return make('LAKE_STORAGE_UNAVAILABLE', `object store unreachable: ${e.message ?? ''}`.trim(), true);
  }
  if (ACCESS_DENIED_NAMES.has(name) || status === 401 || status === 403) {
    return make('LAKE_STORAGE_ACCESS_DENIED', 'access denied; check credentials and permissions', false);
  }
  if (name === 'NoSuchBucket') return make('LAKE_STORAGE_BUCKET_NOT_FOUND', 'bucket does not exist', false);
  if (name === 'NoSuchKey' || name === 'NotFound' || status === 404) {
    return make('LAKE_NOT_FOUND', 'no such object', false);
  }
  if (status !== undefined && status >= 400) return make('LAKE_STORAGE_REQUEST_REJECTED', 'request rejected', false);
  return make('LAKE_STORAGE_FAILED', `unexpected failure: ${e.message ?? String(err)}`, false);
}

// ---------------------------------------------------------------------------------------------
// Events (libs/telemetry subscribes; nothing is built when nobody listens).
// ---------------------------------------------------------------------------------------------

/** diagnostics_channel names S3Storage and LocalFileCache publish on. */
export const S3_STORAGE_CHANNELS = {
  /** An object was downloaded into the local cache (a `localPath` miss): {@link S3DownloadEvent}. */
  download: 'sluice:lake:s3-download',
  /** Cached files were deleted to keep the byte bound: {@link CacheEvictionEvent}. */
  eviction: 'sluice:lake:cache-eviction',
  /** An S3 call failed after the SDK's retries (absent keys excluded): {@link S3ErrorEvent}. */
  error: 'sluice:lake:s3-error',
} as const;

/** Payload of `sluice:lake:s3-download`. */
export interface S3DownloadEvent {
  uri: string;
  key: string;
  bytes: number;
  durationMs: number;
}
/** Payload of `sluice:lake:cache-eviction`. */
export interface CacheEvictionEvent {
  dir: string;
  files: number;
  bytes: number;
  /** Bytes held after the eviction. */
  sizeBytes: number;
}
/** Payload of `sluice:lake:s3-error`. */
export interface S3ErrorEvent {
  uri: string;
  operation: string;
  code: S3StorageErrorCode;
  retryable: boolean;
  httpStatus?: number;
}

const downloadChannel = channel(S3_STORAGE_CHANNELS.download);
const evictionChannel = channel(S3_STORAGE_CHANNELS.eviction);
const errorChannel = channel(S3_STORAGE_CHANNELS.error);

// ---------------------------------------------------------------------------------------------
// Bounded local cache of downloaded objects, for DuckDB to read.
// ---------------------------------------------------------------------------------------------

/** Options of a LocalFileCache. */
export interface LocalFileCacheOptions {
  /** Directory owned by this cache (created if missing). One process per directory. */
  dir: string;
  /** Upper bound of the bytes kept, > 0. Least recently used files are deleted beyond it. */
  maxBytes: number;
}

interface CacheEntry {
  file: string;
  size: number;
}

/**
 * How far past `maxBytes` files pinned by running reads may keep a cache: beyond it they are
 * evicted like any other, so the disk a cache takes stays bounded at this many times its size.
 */
export const PINNED_OVERSHOOT = 2;

// Temporary downloads older than this are leftovers of a crashed process.
const STALE_TEMP_MS = 60 * 60 * 1000;
const TEMP_PREFIX = '.tmp-';

/**
 * Files downloaded by id (e.g. `s3://bucket/key`) into one directory, at most `maxBytes` in total,
 * evicting the least recently used. Only for immutable objects: a cached id is never refreshed.
 * Files appear atomically (temporary file + rename). A file larger than `maxBytes` is kept only
 * until the next insertion. Evicting a file another reader has open is safe on POSIX (unlink); a
 * path handed out inside a {@link FileLease} (the query engine's reads, checkpoint reads) is not
 * evicted until the lease ends, so the cache may hold more than `maxBytes` while reads need it, up
 * to {@link PINNED_OVERSHOOT} times `maxBytes`.
 */
export class LocalFileCache implements PinnableCache {
  readonly dir: string;
  readonly maxBytes: number;
  // Map iteration order is insertion order: re-inserting on each hit makes the first entry the LRU.
  private readonly entries = new Map<string, CacheEntry>();
  /** Files a running read holds (FileLease), by name, with how many leases hold each: never evicted. */
  private readonly pins = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<string>>();
  private total = 0;
  private ready: Promise<void> | undefined;

  constructor(options: LocalFileCacheOptions) {
    if (!options.dir) throw optionsError('cache dir must be set');
    if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes <= 0) {
      throw optionsError(`cache maxBytes must be a positive integer, got ${options.maxBytes}`);
    }
    this.dir = path.resolve(options.dir);
    this.maxBytes = options.maxBytes;
  }

  /** Bytes currently held. */
  get sizeBytes(): number {
    return this.total;
  }

  pin(name: string): void {
    this.pins.set(name, (this.pins.get(name) ?? 0) + 1);
  }

  unpin(name: string): void {
    const n = (this.pins.get(name) ?? 0) - 1;
    if (n > 0) this.pins.set(name, n);
    else this.pins.delete(name);
  }

  /**
   * Path of the cached file for `id`, calling `fetch(tmpFile)` to create it on a miss. `fetch`
   * writes the bytes to `tmpFile`; the cache renames it into place. Concurrent calls for one id
   * share one fetch.
   */
  async getOrFetch(id: string, fetch: (tmpFile: string) => Promise<void>, extension = ''): Promise<string> {
    await this.init();
    const name = cacheFileName(id, extension);
    // Pinned before anything can evict it, for the read asking (if it runs in a lease).
    FileLease.current()?.hold(this, name);
    const hit = this.entries.get(name);
    if (hit !== undefined) {
      // Most recent first, synchronously, so an eviction running during the check below spares it.
      this.entries.delete(name);
      this.entries.set(name, hit);
      // Someone may have cleaned the directory under us; a vanished file is a miss.
      if (await exists(hit.file)) return hit.file;
      if (this.entries.get(name) === hit) this.forget(name);
    }
    const running = this.inflight.get(name);
    if (running !== undefined) return running;
    const job = this.download(name, fetch).finally(() => this.inflight.delete(name));
    this.inflight.set(name, job);
    return job;
  }

  /**
   * Moves `file` (a local copy of the object `id`) into the cache, e.g. a Parquet file just
   * uploaded, so the next read needs no download. Resolves false, leaving `file` in place, when it
   * cannot be moved (another filesystem) or `id` is already cached.
   */
  async adopt(id: string, file: string, extension = ''): Promise<boolean> {
    await this.init();
    const name = cacheFileName(id, extension);
    if (this.entries.has(name) || this.inflight.has(name)) return false;
    const target = path.join(this.dir, name);
    try {
      const { size } = await stat(file);
      await rename(file, target);
      await this.add(name, { file: target, size });
      return true;
    } catch {
      return false;
    }
  }

  private async download(name: string, fetch: (tmpFile: string) => Promise<void>): Promise<string> {
    const file = path.join(this.dir, name);
    const tmp = path.join(this.dir, `${TEMP_PREFIX}${randomUUID()}`);
    try {
      await fetch(tmp);
      const { size } = await stat(tmp);
      await rename(tmp, file);
      await this.add(name, { file, size });
      return file;
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  private async add(name: string, entry: CacheEntry): Promise<void> {
    this.forget(name);
    this.entries.set(name, entry);
    this.total += entry.size;
    await this.evict(name);
  }

  private forget(name: string): void {
    const old = this.entries.get(name);
    if (old === undefined) return;
    this.entries.delete(name);
    this.total -= old.size;
  }

  /**
   * Deletes least recently used files (never `keep`) until the bound holds; resolves when they
   * are gone. Files running reads hold go only after every other file, and only while the cache
   * passes its hard bound ({@link PINNED_OVERSHOOT} × `maxBytes`): then the cache is as before
   * leases, and a read handed more than it holds may find a file gone. (A single pass evicted a
   * pinned file it met past the hard bound while unpinned ones after it stayed, and went on down
   * to `maxBytes`.)
   */
  private async evict(keep: string): Promise<void> {
    const victims: string[] = [];
    let bytes = 0;
    const pass = (bound: number, pinned: boolean) => {
      for (const [name, entry] of this.entries) {
        if (this.total <= bound) return;
        if (name === keep || this.pins.has(name) !== pinned) continue;
        // Bookkeeping first, synchronously, so concurrent insertions never pick the same victim.
        this.forget(name);
        victims.push(entry.file);
        bytes += entry.size;
      }
    };
    pass(this.maxBytes, false);
    pass(this.maxBytes * PINNED_OVERSHOOT, true);
    if (victims.length === 0) return;
    // A failed unlink only leaves a stray file that the next start adopts and evicts again.
    await Promise.all(victims.map((file) => rm(file, { force: true }).catch(() => undefined)));
    if (evictionChannel.hasSubscribers) {
      evictionChannel.publish({ dir: this.dir, files: victims.length, bytes, sizeBytes: this.total } satisfies CacheEvictionEvent);
    }
  }

  private init(): Promise<void> {
    this.ready ??= this.adoptExisting();
    return this.ready;
  }

  /** Takes over files a previous process left, oldest first, so the bound holds across restarts. */
  private async adoptExisting(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const found: { name: string; entry: CacheEntry; mtimeMs: number }[] = [];
    for (const name of await readdir(this.dir)) {
      const file = path.join(this.dir, name);
      const info = await stat(file).catch(() => undefined);
      if (info === undefined || !info.isFile()) continue;
      if (name.startsWith(TEMP_PREFIX)) {
        if (Date.now() - info.mtimeMs > STALE_TEMP_MS) await rm(file, { force: true });
        continue;
      }
      found.push({ name, entry: { file, size: info.size }, mtimeMs: info.mtimeMs });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const f of found) {
      this.entries.set(f.name, f.entry);
      this.total += f.entry.size;
    }
    await this.evict('');
  }
}

function cacheFileName(id: string, extension: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 40) + extension;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

// ---------------------------------------------------------------------------------------------
// S3Storage
// ---------------------------------------------------------------------------------------------

/**
 * How `putIfAbsent` stays atomic.
 * - `conditional-put` (default): PutObject with `If-None-Match: *`. Before the first commit the
 *   server is probed once; a server that ignores the header makes putIfAbsent throw
 *   LAKE_STORAGE_CONDITIONAL_PUT_UNSUPPORTED instead of silently overwriting.
 * - `single-writer`: the operator guarantees that exactly one process writes the table (e.g. one
 *   replica holding a lease). putIfAbsent checks with HEAD and still sends the header; no probe.
 */
export type S3CommitMode = 'conditional-put' | 'single-writer';

/** Options of S3Storage. Libraries take these from the app's config; nothing here reads env. */
export interface S3StorageOptions {
  bucket: string;
  /** Table root inside the bucket, e.g. `lake/orders_silver`; '' for the bucket root. */
  prefix?: string;
  /** Endpoint URL of an S3-compatible server, e.g. `http://127.0.0.1:18333`; AWS when omitted. */
  endpoint?: string;
  /** Region for signing; default `us-east-1`. */
  region?: string;
  /** Static credentials; the SDK's default provider chain when omitted. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Path-style URLs (`endpoint/bucket/key`); default true when `endpoint` is set. */
  forcePathStyle?: boolean;
  /** Local cache for `localPath`: a shared LocalFileCache, or a directory and bound for a private one. */
  cache: LocalFileCache | LocalFileCacheOptions;
  /** Per-request socket timeout, ms; default 30 000. */
  requestTimeoutMs?: number;
  /** TCP connect timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** SDK attempts per request including the first (retries with backoff on retryable errors); default 3. */
  maxAttempts?: number;
  /** See S3CommitMode; default `conditional-put`. */
  commitMode?: S3CommitMode;
}

/**
 * Splits a table URI `s3://<bucket>[/<prefix>]` (e.g. from `LAKE_URI`) into the `bucket` and
 * `prefix` options. LAKE_STORAGE_OPTIONS_INVALID for another scheme or an invalid bucket name.
 */
export function parseS3Uri(uri: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/?#]+)\/?([^?#]*)$/.exec(uri);
  if (m === null) throw optionsError(`not an s3://bucket/prefix URI: ${JSON.stringify(uri)}`);
  const [, bucket, rawPrefix] = m;
  // S3 bucket naming rules: 3-63 of lowercase letters, digits, '.', '-', starting and ending alphanumeric.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw optionsError(`invalid bucket name in ${JSON.stringify(uri)}`);
  const prefix = rawPrefix.replace(/\/+$/, '');
  if (prefix !== '') checkKey(prefix, 'prefix');
  return { bucket, prefix };
}

/** A key of a Delta log, the table's own or its amortised-merge tail's (`_sluice_tail/_delta_log/…`). */
const LOG_KEY = /(^|\/)_delta_log\//;
const DELETE_BATCH = 1000; // DeleteObjects accepts at most 1000 keys per request
const CONFLICT_ATTEMPTS = 5; // 409 ConditionalRequestConflict: another conditional write in flight
const CONFLICT_BACKOFF_MS = 50;
const FILE_RETRY_BACKOFF_MS = 200;
const PROBE_DIR = '_sluice';

/** Objects of one table root in an S3 bucket. See the Storage interface for each method's contract. */
export class S3Storage implements Storage {
  readonly uri: string;
  /** The file cache behind `localPath`. */
  readonly cache: LocalFileCache;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly root: string; // '' or ends with '/'
  private readonly commitMode: S3CommitMode;
  private readonly maxAttempts: number;
  private probe: Promise<void> | undefined;

  constructor(options: S3StorageOptions) {
    if (!options.bucket) throw optionsError('bucket must be set');
    const prefix = (options.prefix ?? '').replace(/^\/+|\/+$/g, '');
    if (prefix !== '') checkKey(prefix, 'prefix');
    this.bucket = options.bucket;
    this.root = prefix === '' ? '' : `${prefix}/`;
    this.uri = `s3://${options.bucket}${prefix === '' ? '' : `/${prefix}`}`;
    this.commitMode = options.commitMode ?? 'conditional-put';
    this.maxAttempts = options.maxAttempts ?? 3;
    if (!Number.isSafeInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw optionsError(`maxAttempts must be an integer >= 1, got ${options.maxAttempts}`);
    }
    if (this.commitMode !== 'conditional-put' && this.commitMode !== 'single-writer') {
      throw optionsError(`commitMode must be conditional-put or single-writer, got ${String(this.commitMode)}`);
    }
    this.cache = options.cache instanceof LocalFileCache ? options.cache : new LocalFileCache(options.cache);
    this.client = new S3Client({
      endpoint: options.endpoint,
      region: options.region ?? 'us-east-1',
      credentials: options.credentials,
      forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
      maxAttempts: this.maxAttempts,
      retryMode: 'standard',
      requestHandler: {
        requestTimeout: options.requestTimeoutMs ?? 30_000,
        connectionTimeout: options.connectTimeoutMs ?? 5_000,
      },
      // Checksums only where S3 requires them: S3-compatible servers vary in trailer support.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async get(key: string): Promise<Uint8Array> {
    const body = await this.getIfExists(key);
    if (body === undefined) {
      throw new SluiceError('LAKE_NOT_FOUND', `get ${this.uri}/${key}: no such object`, {
        details: { operation: 'get', uri: this.uri, key },
      });
    }
    return body;
  }

  async getIfExists(key: string): Promise<Uint8Array | undefined> {
    const fullKey = this.fullKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: fullKey }));
      const body = out.Body === undefined ? new Uint8Array(0) : await out.Body.transformToByteArray();
      // A body cut short on a line boundary would read as a shorter, valid commit.
      if (out.ContentLength !== undefined && body.length !== out.ContentLength) {
        throw new SluiceError<S3StorageErrorCode>('LAKE_STORAGE_TRUNCATED', `get ${this.uri}/${key}: read ${body.length} of ${out.ContentLength} bytes`, {
          retryable: true,
          details: { operation: 'get', uri: this.uri, key },
        });
      }
      return body;
    } catch (err) {
      const e = this.translate(err, 'get', key);
      if (e.code === 'LAKE_NOT_FOUND') return undefined;
      throw e;
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const fullKey = this.fullKey(key);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body }));
    } catch (err) {
      throw this.translate(err, 'put', key);
    }
  }

  /**
   * Uploads the local file `localFile` as `key` with a streamed PutObject (single request, so at
   * most 5 GB), then moves the file into the local cache: the writer's copy serves later reads.
   * Retries retryable failures itself (a stream cannot be replayed by the SDK), reopening the file.
   */
  async putFile(key: string, localFile: string): Promise<void> {
    const fullKey = this.fullKey(key);
    for (let attempt = 1; ; attempt++) {
      try {
        const { size } = await stat(localFile);
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: createReadStream(localFile), ContentLength: size }),
        );
        break;
      } catch (err) {
        const e = this.translate(err, 'putFile', key);
        if (!e.retryable || attempt >= this.maxAttempts) throw e;
        await sleep(FILE_RETRY_BACKOFF_MS * 2 ** (attempt - 1));
      }
    }
    await this.cache.adopt(this.cacheId(fullKey), localFile, extensionOf(key));
  }

  /**
   * Atomic create (see Storage). When the SDK had to resend the request (a timeout or reset after
   * the server may already have stored it), a 412 is ambiguous; the stored bytes are then
   * compared with `body`, and equal bytes count as this call's write. Delta commits carry a unique
   * txnId, so equal bytes cannot come from another writer.
   */
  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const fullKey = this.fullKey(key);
    if (this.commitMode === 'conditional-put') {
      await this.ensureConditionalPut();
    } else if ((await this.head(key)) !== undefined) {
      return false;
    }
    let attemptsSent = 0;
    for (let round = 1; ; round++) {
      try {
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body, IfNoneMatch: '*' }));
        return true;
      } catch (err) {
        attemptsSent += asAwsLike(err).$metadata?.attempts ?? 1;
        if (isPreconditionFailed(err)) {
          return attemptsSent > 1 ? this.holds(key, body) : false;
        }
        if (isConditionalConflict(err)) {
          if (round < CONFLICT_ATTEMPTS) {
            await sleep(CONFLICT_BACKOFF_MS * round);
            continue;
          }
          // Still another conditional write in flight: the caller may try again (DELTA.md §6), so
          // retryable, not a 4xx rejection the commit gives up on at once.
          throw new SluiceError<S3StorageErrorCode>('LAKE_STORAGE_UNAVAILABLE', `putIfAbsent ${this.uri}/${key}: another conditional write kept it busy (409 after ${CONFLICT_ATTEMPTS} tries)`, {
            retryable: true,
            cause: err,
            details: { operation: 'putIfAbsent', uri: this.uri, key },
          });
        }
        throw this.translate(err, 'putIfAbsent', key);
      }
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<StoredObject[]> {
    if (prefix !== '') checkKey(prefix.replace(/\/$/, ''), 'prefix');
    const limit = options.limit ?? Infinity;
    const exclude = options.exclude ?? [];
    const objects: StoredObject[] = [];
    let token: string | undefined;
    // Asked for: keys after this one. Sent as StartAfter, and checked here too, for a server
    // that ignores StartAfter.
    const after = options.startAfter === undefined ? undefined : this.root + options.startAfter;
    // An excluded prefix is skipped by listing anew after its last possible key (the largest code
    // point), the token to page on with kept in case the server ignores StartAfter.
    let startAfter = after;
    let resume: string | undefined;
    let skipping = exclude.length > 0;
    for (;;) {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.root + prefix,
            ContinuationToken: token,
            StartAfter: token === undefined ? startAfter : undefined,
            // S3 lists in key order, so the first page of a limited listing holds its answer
            // (a directory marker or an excluded key skipped below may ask for one more page).
            MaxKeys: Number.isFinite(limit) ? Math.min(1000, Math.max(1, limit - objects.length)) : undefined,
          }),
        );
      } catch (err) {
        throw this.translate(err, 'list', prefix);
      }
      const contents = page.Contents ?? [];
      if (token === undefined && startAfter !== undefined && startAfter !== after) {
        // The answer to a skip listed from before it: the server ignored StartAfter. That page
        // is dropped (its keys were listed already) and the listing pages on without skipping.
        const first = contents.find((o) => o.Key !== undefined)?.Key;
        if (first !== undefined && first <= startAfter) {
          if (resume === undefined) break;
          skipping = false;
          token = resume;
          continue;
        }
      }
      let last: string | undefined;
      for (const o of contents) {
        if (o.Key === undefined || (after !== undefined && o.Key <= after)) continue;
        last = o.Key.slice(this.root.length);
        // Some servers list directory markers ("a/b/"); they are not objects of the table.
        if (last.endsWith('/') || exclude.some((p) => last!.startsWith(p))) continue;
        objects.push({ key: last, size: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() ?? 0 });
      }
      if (!page.IsTruncated || objects.length >= limit) break;
      const skipped = skipping && last !== undefined ? exclude.find((p) => last!.startsWith(p)) : undefined;
      const skipTo = skipped === undefined ? undefined : this.root + skipped + '\u{10FFFF}';
      // A page ending inside an excluded prefix is skipped past it once (a key beyond the largest
      // code point would end the next page inside it again: that one pages through).
      if (skipTo !== undefined && skipTo !== startAfter) {
        resume = page.NextContinuationToken;
        token = undefined;
        startAfter = skipTo;
      } else {
        token = page.NextContinuationToken;
        if (token === undefined) break;
      }
    }
    return objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, limit);
  }

  async delete(keys: string[]): Promise<void> {
    const fullKeys = keys.map((k) => this.fullKey(k));
    for (let i = 0; i < fullKeys.length; i += DELETE_BATCH) {
      const batch = fullKeys.slice(i, i + DELETE_BATCH);
      let out;
      try {
        out = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        );
      } catch (err) {
        throw this.translate(err, 'delete', batch[0]?.slice(this.root.length));
      }
      // DeleteObjects answers 200 and lists per-key failures in the body.
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        const first = failed[0];
        const retryable = failed.some((e) => e.Code === 'InternalError' || e.Code === 'SlowDown');
        throw new SluiceError<S3StorageErrorCode>(
          retryable ? 'LAKE_STORAGE_UNAVAILABLE' : 'LAKE_STORAGE_REQUEST_REJECTED',
          `delete ${this.uri}: ${failed.length} of ${batch.length} keys failed, first ${first.Key}: ${first.Code} ${first.Message ?? ''}`.trim(),
          { retryable, details: { operation: 'delete', uri: this.uri, failed: failed.map((e) => ({ key: e.Key, code: e.Code })) } },
        );
      }
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    const fullKey = this.fullKey(key);
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: fullKey }));
      return { key, size: out.ContentLength ?? 0, modifiedMs: out.LastModified?.getTime() ?? 0 };
    } catch (err) {
      const e = this.translate(err, 'head', key);
      if (e.code === 'LAKE_NOT_FOUND') return undefined;
      throw e;
    }
  }

  /**
   * Downloads the object into the bounded cache (once per key) and returns the file's path.
   * Data files are immutable (unique `part-<uuid>` names): a cached one is never re-read. A log
   * file's name is not unique over time: a checkpoint is written with a plain put, and a table
   * dropped and created again at the same place has its own `N.checkpoint.parquet`. Those are
   * cached by key, size and modification time (one HEAD first), so a cache that outlived the old
   * table no longer serves its checkpoint as the new one's.
   */
  async localPath(key: string): Promise<string> {
    const fullKey = this.fullKey(key);
    let id = this.cacheId(fullKey);
    if (LOG_KEY.test(key)) {
      const found = await this.head(key);
      if (found === undefined) {
        throw new SluiceError<S3StorageErrorCode>('LAKE_NOT_FOUND', `localPath ${this.uri}/${key}: no such object`, { retryable: false, details: { operation: 'localPath', uri: this.uri, key } });
      }
      id += `#${found.size}-${found.modifiedMs}`;
    }
    return this.cache.getOrFetch(id, (tmp) => this.download(key, fullKey, tmp), extensionOf(key));
  }

  /** Closes the SDK's sockets. The instance must not be used afterwards. */
  destroy(): void {
    this.client.destroy();
  }

  /**
   * Checks once per instance that the server rejects a second `If-None-Match: *` PUT of one key.
   * Runs before the first putIfAbsent; a failed check (network) is retried on the next call.
   */
  async ensureConditionalPut(): Promise<void> {
    this.probe ??= this.probeConditionalPut().catch((err) => {
      this.probe = undefined;
      throw err;
    });
    return this.probe;
  }

  private async probeConditionalPut(): Promise<void> {
    const key = `${PROBE_DIR}/conditional-put-probe-${randomUUID()}`;
    const fullKey = this.fullKey(key);
    const send = (body: string) =>
      this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body, IfNoneMatch: '*' }));
    try {
      try {
        await send('first');
      } catch (err) {
        throw this.translate(err, 'probe conditional put', key);
      }
      let honoured = false;
      try {
        await send('second');
      } catch (err) {
        if (!isPreconditionFailed(err)) throw this.translate(err, 'probe conditional put', key);
        honoured = true;
      }
      if (!honoured) {
        throw new SluiceError<S3StorageErrorCode>(
          'LAKE_STORAGE_CONDITIONAL_PUT_UNSUPPORTED',
          `${this.uri}: the server overwrote an object despite If-None-Match: *; concurrent commits would be lost. ` +
            `Use a server with conditional writes, or commitMode 'single-writer' if only one process writes this table.`,
          { details: { uri: this.uri } },
        );
      }
    } finally {
      await this.delete([key]).catch(() => undefined);
    }
  }

  private async download(key: string, fullKey: string, tmpFile: string): Promise<void> {
    const started = performance.now();
    let out;
    try {
      out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: fullKey }));
    } catch (err) {
      throw this.translate(err, 'localPath', key);
    }
    const body = out.Body;
    if (!(body instanceof Readable)) {
      throw new SluiceError<S3StorageErrorCode>('LAKE_STORAGE_FAILED', `localPath ${this.uri}/${key}: body is not a stream`);
    }
    try {
      await pipeline(body, createWriteStream(tmpFile, { flags: 'wx' }));
    } catch (err) {
      throw this.translate(err, 'localPath', key);
    }
    const { size } = await stat(tmpFile);
    if (out.ContentLength !== undefined && size !== out.ContentLength) {
      throw new SluiceError<S3StorageErrorCode>(
        'LAKE_STORAGE_TRUNCATED',
        `localPath ${this.uri}/${key}: downloaded ${size} of ${out.ContentLength} bytes`,
        { retryable: true, details: { operation: 'localPath', uri: this.uri, key } },
      );
    }
    if (downloadChannel.hasSubscribers) {
      downloadChannel.publish({ uri: this.uri, key, bytes: size, durationMs: performance.now() - started } satisfies S3DownloadEvent);
    }
  }

  /** True when `key` holds exactly `body`. */
  private async holds(key: string, body: Uint8Array): Promise<boolean> {
    const stored = await this.getIfExists(key);
    return stored !== undefined && Buffer.from(stored).equals(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  }

  private cacheId(fullKey: string): string {
    return `s3://${this.bucket}/${fullKey}`;
  }

  private fullKey(key: string): string {
    checkKey(key, 'key');
    return this.root + key;
  }

  private translate(err: unknown, operation: string, key?: string): SluiceError<S3StorageErrorCode> {
    const e = translateS3Error(err, { operation, uri: this.uri, key });
    if (e.code !== 'LAKE_NOT_FOUND' && errorChannel.hasSubscribers) {
      const httpStatus = e.details.httpStatus as number | undefined;
      errorChannel.publish({ uri: this.uri, operation, code: e.code, retryable: e.retryable, httpStatus } satisfies S3ErrorEvent);
    }
    return e;
  }
}

/** `.parquet` for `a/part-1.snappy.parquet`: DuckDB and humans recognise cached files by it. */
function extensionOf(key: string): string {
  return /\.[A-Za-z0-9]{1,12}$/.exec(key)?.[0] ?? '';
}

function isPreconditionFailed(err: unknown): boolean {
  return asAwsLike(err).name === 'PreconditionFailed' || httpStatus(err) === 412;
}

function isConditionalConflict(err: unknown): boolean {
  return asAwsLike(err).name === 'ConditionalRequestConflict' || httpStatus(err) === 409;
}

/**
 * Rejects keys that are not relative '/'-separated paths: empty, absolute, with empty, '.' or
 * '..' segments, backslashes or control characters. Such keys would escape the table root on
 * local storage and are never produced by the table format.
 */
function checkKey(key: string, what: string): void {
  const bad =
    typeof key !== 'string' ||
    key === '' ||
    key.startsWith('/') ||
    key.includes('\\') ||
    /[\u0000-\u001f\u007f]/.test(key) ||
    key.split('/').some((s) => s === '' || s === '.' || s === '..');
  if (bad) {
    throw new SluiceError<S3StorageErrorCode>('LAKE_STORAGE_KEY_INVALID', `invalid storage ${what}: ${JSON.stringify(key)}`, {
      details: { [what]: key },
    });
  }
}

function optionsError(message: string): SluiceError<S3StorageErrorCode> {
  return new SluiceError<S3StorageErrorCode>('LAKE_STORAGE_OPTIONS_INVALID', message);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
