import http from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { ApiKeyStore, type ApiKeyEntry, type Principal } from './auth/api-keys';
import { isSpace, splitAvro, splitJson, splitNdjson, type SplitResult } from './body/split';
import { InFlightBudget } from './delivery/in-flight';
import type { EventPublisher, RawRecord } from './delivery/publisher';
import { checkEvent, repeatsContract, withinIssueBudget, type AcceptedEvent, type RejectedEvent } from './events/check-event';
import { HEADERS, type SchemaIdLearner } from '@sluice/contracts';
import { extractTraceContext, httpMetricsHook, injectSampledTraceHeaders, type SluiceMetrics, type Telemetry } from '@sluice/telemetry';
import { replyError } from './http/reply-error';

/** How often Node looks for requests past their timeout, ms. */
const CONNECTIONS_CHECK_MS = 1000;
/** Longest silence about a producer still using one of its previousKeys. */
const PREVIOUS_KEY_LOG_INTERVAL_MS = 60_000;

/** Everything the HTTP app needs; main.ts builds the real ones, tests may build others. */
export interface IngestDeps {
  publisher: EventPublisher;
  apiKeys: readonly ApiKeyEntry[];
  rawTopic: string;
  limits: {
    maxBodyBytes: number;
    maxBatchEvents: number;
    maxEventBytes: number;
    maxDepth: number;
    /** event_time limits of the timestamp rules (validate applies the same). */
    maxFutureSkewMs: number;
    maxEventAgeMs: number;
    maxInFlightBytes: number;
    /** What one producer (API key identity) may hold of it at once; default all of it. */
    maxInFlightBytesPerProducer?: number;
    /** Longest time to receive a whole request (headers and body), ms; default 60 000. */
    requestTimeoutMs?: number;
  };
  retryAfterSeconds: number;
  /** Learns the schema ids of Confluent-framed Avro events from a registry; without it they are rejected as unknown. */
  schemaIds?: SchemaIdLearner;
  /** Readiness beyond the publisher (e.g. an admin metadata probe); defaults to publisher.isAvailable. */
  isReady?: () => boolean;
  /** Liveness (/healthz); false = a wedged Kafka producer only a restart recovers. Default: always live. */
  isLive?: () => boolean;
  clock?: () => number;
  logger?: FastifyBaseLogger;
  /** Metrics (events in by outcome, HTTP latency) and a producer span per request, with its trace context in every record's headers. */
  telemetry?: Pick<Telemetry, 'metrics' | 'withSpan'>;
}

/** The app plus the switch main.ts flips on SIGTERM. */
export interface IngestApp {
  app: FastifyInstance;
  /** Refuses new event requests with 503 from now on; /readyz turns false. */
  beginShutdown(): void;
  /** What /readyz answers: not shutting down and Kafka reachable. */
  ready(): boolean;
  budget: InFlightBudget;
}

const NDJSON_TYPES = ['application/x-ndjson', 'application/ndjson', 'application/jsonl', 'application/x-jsonlines'];
const AVRO_TYPES = ['application/vnd.apache.avro', 'avro/binary'];
const SUPPORTED_TYPES = ['application/json', ...NDJSON_TYPES, ...AVRO_TYPES];
/** HTTP header naming the contract of every event of a request (an event's own field must agree). */
export const CONTRACT_HTTP_HEADER = 'sluice-contract';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** The request's in-flight reservation, held while a handler works on the body. */
    budgetHold?: { begin(): void; end(): void };
    /** `100 Continue` was sent: the client was asked for its body. */
    bodyInvited?: boolean;
  }
}

/** Builds the ingest HTTP app: POST /v1/events, /healthz, /readyz. */
export function buildApp(deps: IngestDeps): IngestApp {
  const { limits, retryAfterSeconds } = deps;
  const clock = deps.clock ?? Date.now;
  const keys = new ApiKeyStore(deps.apiKeys);
  const budget = new InFlightBudget(limits.maxInFlightBytes, limits.maxInFlightBytesPerProducer);
  const isReady = deps.isReady ?? (() => deps.publisher.isAvailable());
  const metrics: SluiceMetrics | undefined = deps.telemetry?.metrics;
  let shuttingDown = false;

  const app = Fastify({
    bodyLimit: limits.maxBodyBytes,
    // fastify's default (0) turns Node's request timeout off: a body trickled in byte by byte
    // held its in-flight reservation (up to the body limit) for as long as the client liked.
    requestTimeout: limits.requestTimeoutMs ?? 60_000,
    // Node answers 408 and closes the connection; it looks every connectionsCheckingInterval,
    // 30 s by default, which only a server built here can change. It gets fastify's own settings
    // (the request timeout above, fastify's keep-alive timeout) as fastify's server would.
    //
    // Duplicate headers are joined, not reduced to the first: a request with two Authorization
    // headers (which a proxy in front may have read the other of) or two Content-Types is refused
    // for its joined value instead of judged by whichever came first.
    //
    // `Expect: 100-continue` goes to the same handler without Node's automatic 100 Continue: the
    // event route sends it once the key, the declared size and the budget pass, so a client that
    // would be refused is not invited to send its body first.
    serverFactory: (handler, options) => {
      const { requestTimeout, keepAliveTimeout } = options as { requestTimeout: number; keepAliveTimeout: number };
      const server = http.createServer({ requestTimeout, keepAliveTimeout, connectionsCheckingInterval: CONNECTIONS_CHECK_MS, joinDuplicateHeaders: true }, handler);
      server.on('checkContinue', handler);
      return server;
    },
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    // Per-request logs would be per-message logs at 100k events/s; metrics cover requests.
    logController: new LogController({ disableRequestLogging: true }),
    // fastify's own answer while closing is a bare 503 without Retry-After or a code: requests
    // that race the drain on open connections are answered by the route (INGEST_SHUTTING_DOWN).
    return503OnClosing: false,
  });

  app.removeAllContentTypeParsers();
  const asBuffer = (_req: FastifyRequest, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => done(null, body);
  app.addContentTypeParser(SUPPORTED_TYPES, { parseAs: 'buffer' }, asBuffer);

  if (metrics) app.addHook('onResponse', httpMetricsHook(metrics));

  // While draining, tell keep-alive clients to reconnect elsewhere. A request refused before its
  // invited body (`Expect: 100-continue` with no 100 sent) closes too: the client may send the
  // body anyway or not, and the connection cannot tell which bytes come next.
  app.addHook('onSend', async (req, reply) => {
    if (shuttingDown || (expectsContinue(req) && !req.bodyInvited)) reply.header('connection', 'close');
  });

  // Answered before the body is read: fastify reads a not-found request's body (any size, no key
  // asked, outside the budget) before its handler runs, so anyone could make ingest hold bodies
  // up to the limit on every connection. The connection is closed rather than drained.
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url !== undefined) return undefined;
    reply.header('connection', 'close');
    return replyError(reply, 'INGEST_NOT_FOUND', retryAfterSeconds);
  });
  app.setNotFoundHandler((_req, reply) => replyError(reply, 'INGEST_NOT_FOUND', retryAfterSeconds));

  app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, req, reply) => {
    switch (err.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return replyError(reply, 'INGEST_BODY_TOO_LARGE', retryAfterSeconds, { limitBytes: limits.maxBodyBytes });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      case 'FST_ERR_CTP_INVALID_TYPE':
        return replyError(reply, 'INGEST_UNSUPPORTED_MEDIA_TYPE', retryAfterSeconds, {
          supported: SUPPORTED_TYPES,
        });
      default:
        if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) {
          return replyError(reply, 'INGEST_BODY_INVALID', retryAfterSeconds, { reason: err.message });
        }
        req.log.error({ err }, 'unexpected error');
        return replyError(reply, 'INGEST_INTERNAL', retryAfterSeconds);
    }
  });

  // A rotation ends when the producer stops using its previous keys: say so while it still does.
  const previousKeyLoggedAt = new Map<string, number>();
  const notePreviousKey = (log: FastifyBaseLogger, producer: string) => {
    const now = Date.now();
    if (now - (previousKeyLoggedAt.get(producer) ?? Number.NEGATIVE_INFINITY) < PREVIOUS_KEY_LOG_INTERVAL_MS) return;
    previousKeyLoggedAt.set(producer, now);
    log.warn({ producer }, 'a request authenticated with one of its producer\'s previousKeys: remove them from INGEST_API_KEYS once this stops');
  };

  app.get('/healthz', async (_req, reply) => {
    const live = deps.isLive?.() ?? true;
    return reply.code(live ? 200 : 503).send({ status: live ? 'alive' : 'wedged' });
  });
  const ready = () => !shuttingDown && isReady();
  app.get('/readyz', async (_req, reply) => {
    const r = ready();
    return reply.code(r ? 200 : 503).send({ ready: r, shuttingDown });
  });

  app.route({
    method: 'POST',
    url: '/v1/events',
    onRequest: async (req, reply) => {
      const declared = Number(req.headers['content-length']);
      const hasBody = declared > 0 || req.headers['transfer-encoding'] !== undefined;
      // Refused before its body is read: the connection closes, or Node reads and discards the
      // body on it up to the request timeout (an unauthenticated 10 GB upload kept it reading).
      // A known key's body within the limit is cheap to discard: refused for load (429, Kafka
      // away 503) it keeps its connection, so clients backing off do not reconnect each time.
      const refuse = (code: Parameters<typeof replyError>[1], details?: Record<string, unknown>, close = hasBody) => {
        if (close) reply.header('connection', 'close');
        return replyError(reply, code, retryAfterSeconds, details);
      };
      if (shuttingDown) return refuse('INGEST_SHUTTING_DOWN');
      const auth = keys.authenticate(req.headers.authorization);
      if (!auth.ok) {
        reply.header('www-authenticate', 'Bearer realm="sluice-ingest"');
        return refuse('INGEST_UNAUTHENTICATED', { reason: auth.reason });
      }
      req.principal = auth.principal;
      if (auth.previousKey) notePreviousKey(req.log, auth.principal.producer);
      const unreadable = unreadableBody(req.headers['content-encoding'], req.headers['content-type'], req.headers['transfer-encoding'], hasBody);
      if (unreadable !== undefined) return refuse('INGEST_UNSUPPORTED_MEDIA_TYPE', { supported: SUPPORTED_TYPES, reason: unreadable });
      if (Number.isFinite(declared) && declared > limits.maxBodyBytes) return refuse('INGEST_BODY_TOO_LARGE', { limitBytes: limits.maxBodyBytes });
      const unbounded = hasBody && (!Number.isFinite(declared) || req.headers['transfer-encoding'] !== undefined);
      if (!deps.publisher.isAvailable()) return refuse('INGEST_UNAVAILABLE', { reason: 'Kafka is unreachable' }, unbounded);
      // Chunked bodies declare no size: reserve the worst case, the body limit.
      const reserve = Number.isFinite(declared) && declared >= 0 ? declared : limits.maxBodyBytes;
      const producer = auth.principal.producer;
      const refused = budget.tryAcquire(reserve, producer);
      if (refused === 'total') return refuse('INGEST_OVERLOADED', { limitBytes: budget.limitBytes }, unbounded);
      if (refused === 'producer') return refuse('INGEST_OVERLOADED', { limitBytes: budget.producerLimitBytes, scope: 'producer' }, unbounded);
      // Released once the response is closed (sent, or the client went away) and no handler holds
      // the body; 'close' used to release it alone, while a handler still held the body waiting on
      // Kafka, so clients that disconnected and retried were reserved twice.
      let closed = false;
      let handling = false;
      let released = false;
      const release = () => {
        if (!released) budget.release(reserve, producer);
        released = true;
      };
      req.budgetHold = {
        begin: () => (handling = true),
        end: () => {
          handling = false;
          if (closed) release();
        },
      };
      reply.raw.once('close', () => {
        closed = true;
        if (!handling) release();
      });
      if (expectsContinue(req)) {
        reply.raw.writeContinue();
        req.bodyInvited = true;
      }
      return undefined;
    },
    handler: async (req, reply) => {
      // The body stays in memory until the handler returns, even when the client has gone away
      // (it may still wait on Kafka): so does its reservation.
      req.budgetHold?.begin();
      try {
        return await receiveEvents(req, reply);
      } finally {
        req.budgetHold?.end();
      }
    },
  });

  /** POST /v1/events once authenticated and within the budget: split, check, publish, answer. */
  async function receiveEvents(req: FastifyRequest, reply: FastifyReply) {
    const principal = req.principal as Principal;
    const body = req.body;
    if (!Buffer.isBuffer(body)) {
      return replyError(reply, 'INGEST_UNSUPPORTED_MEDIA_TYPE', retryAfterSeconds, { supported: SUPPORTED_TYPES });
    }
    const mediaType = mediaTypeOf(req.headers['content-type']);
    const isAvro = AVRO_TYPES.includes(mediaType);
    const split = splitBody(body, mediaType, limits.maxBatchEvents);
    if (!split.ok) {
      if ('tooMany' in split) {
        return replyError(reply, 'INGEST_BATCH_TOO_LARGE', retryAfterSeconds, { limitEvents: limits.maxBatchEvents, events: split.count });
      }
      return replyError(reply, 'INGEST_BODY_INVALID', retryAfterSeconds, { reason: split.reason });
    }

    if (isAvro && deps.schemaIds !== undefined) {
      try {
        await deps.schemaIds.prepare(split.events.map((e) => e.bytes));
      } catch (err) {
        // The registry is down or refuses us: the events are not judged, the producer retries.
        req.log.warn({ err }, 'schema registry lookup failed');
        // Only the code: the message quotes the registry's own answer (a proxy's page, the refusal
        // of ingest's credentials), which is for the log, not for producers.
        return replyError(reply, 'INGEST_REGISTRY_UNAVAILABLE', retryAfterSeconds, { registry: (err as { code?: string }).code ?? 'REGISTRY_UNAVAILABLE' });
      }
    }
    const accepted: AcceptedEvent[] = [];
    const rejected: RejectedEvent[] = [];
    const headerContract = req.headers[CONTRACT_HTTP_HEADER];
    const requestContract = typeof headerContract === 'string' && headerContract.length > 0 ? headerContract : undefined;
    const now = clock();
    for (const slice of split.events) {
      const result = checkEvent(slice, principal, requestContract, limits, now, isAvro, deps.schemaIds?.decoder);
      if (result.ok) accepted.push(result.accepted);
      else rejected.push(result.rejected);
    }
    if (rejected.length > 0) metrics?.eventsIn.add(rejected.length, { outcome: 'rejected' });
    const errors = withinIssueBudget(rejected);
    if (accepted.length === 0) {
      const allForbidden = rejected.every((r) => r.code === 'CONTRACT_FORBIDDEN' || r.code === 'PRODUCER_MISMATCH');
      return replyError(reply, allForbidden ? 'INGEST_FORBIDDEN' : 'INGEST_ALL_REJECTED', retryAfterSeconds, {}, {
        accepted: 0,
        rejected: rejected.length,
        errors,
      });
    }

    // The time of acceptance is the record's Kafka timestamp (docs/design/ingest.md).
    const records: RawRecord[] = accepted.map((e) => {
      const headers: Record<string, string> = { [HEADERS.producer]: principal.producer };
      if (repeatsContract(e.bytes, requestContract, isAvro)) headers[HEADERS.contract] = e.contract;
      return { key: e.key, value: e.bytes, headers };
    });
    if (!deps.publisher.hasCapacity(records.length)) {
      metrics?.eventsIn.add(records.length, { outcome: 'throttled' });
      return replyError(reply, 'INGEST_OVERLOADED', retryAfterSeconds, { reason: 'the Kafka producer queue is full' });
    }
    try {
      if (deps.telemetry) {
        // One producer span per request, continuing the caller's trace; when it is sampled,
        // every record carries it (an unsampled traceparent is left off: see the helper).
        await deps.telemetry.withSpan(
          'ingest publish',
          async () => {
            const trace = injectSampledTraceHeaders({} as Record<string, string>);
            for (const r of records) Object.assign(r.headers, trace);
            await deps.publisher.publish(deps.rawTopic, records);
          },
          { parent: callerTraceContext(req.headers.traceparent), kind: 'producer', attributes: { events: records.length } },
        );
      } else {
        await deps.publisher.publish(deps.rawTopic, records);
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      const delivered = Number((err as { details?: { delivered?: unknown } }).details?.delivered ?? 0);
      req.log.warn({ code, events: records.length, delivered }, 'publish failed');
      // Some events may already be in Kafka; none is reported accepted, so the client retries
      // the whole request and event_id makes the repeat harmless downstream. An event the topic
      // refuses as too large fails every retry: that answer is not retryable.
      const answer = code === 'KAFKA_QUEUE_FULL' ? 'INGEST_OVERLOADED' : code === 'KAFKA_MESSAGE_TOO_LARGE' ? 'INGEST_EVENT_REFUSED_BY_KAFKA' : 'INGEST_UNAVAILABLE';
      metrics?.eventsIn.add(records.length, { outcome: PUBLISH_FAILURE_OUTCOME[answer] });
      return replyError(reply, answer, retryAfterSeconds, {
        reason: code ?? 'unknown',
        possiblyDelivered: delivered,
      }, { accepted: 0, rejected: rejected.length, errors });
    }
    metrics?.eventsIn.add(accepted.length, { outcome: 'accepted' });
    return reply.code(rejected.length === 0 ? 200 : 207).send({ accepted: accepted.length, rejected: rejected.length, errors });
  }

  return {
    app,
    budget,
    ready,
    beginShutdown: () => {
      shuttingDown = true;
    },
  };
}

/**
 * `events_in` outcome of events whose publish failed, by the answer: a full queue is
 * backpressure, an event the topic refuses is refused, anything else (broker down, timeout) an
 * outage, so a dashboard does not show a Kafka outage as load shedding.
 */
const PUBLISH_FAILURE_OUTCOME = {
  INGEST_OVERLOADED: 'throttled',
  INGEST_EVENT_REFUSED_BY_KAFKA: 'refused',
  INGEST_UNAVAILABLE: 'unavailable',
} as const;

/** Node's own test for `Expect: 100-continue` (it emits `checkContinue` when this matches). */
const CONTINUE_EXPECTATION = /(?:^|\W)100-continue(?:$|\W)/i;

/** Whether the client waits for `100 Continue` before sending its body (HTTP/1.1 only, as Node and RFC 9110 have it). */
function expectsContinue(req: FastifyRequest): boolean {
  const expect = req.headers.expect;
  return req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor === 1 && expect !== undefined && CONTINUE_EXPECTATION.test(expect);
}

/** The media type of a Content-Type header, lower case, without its parameters. */
function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The body's events by its media type; a JSON body behind a byte-order mark is refused (see {@link startsWithBom}). */
function splitBody(body: Buffer, mediaType: string, maxEvents: number): SplitResult {
  if (AVRO_TYPES.includes(mediaType)) return splitAvro(body);
  if (startsWithBom(body)) return { ok: false, reason: 'the body starts with a UTF-8 byte-order mark: send JSON without one' };
  return NDJSON_TYPES.includes(mediaType) ? splitNdjson(body, maxEvents) : splitJson(body, maxEvents);
}

/**
 * Whether a JSON body starts with a UTF-8 byte-order mark, after any leading whitespace. The
 * splitter does not skip one (a batch behind it was taken for one event and refused as not an
 * object, under-counting the batch) while the decoder does (RFC 8259 §8.1 lets a parser ignore
 * it; contracts.md): refused as a body instead.
 */
function startsWithBom(body: Buffer): boolean {
  let i = 0;
  while (i < body.length && isSpace(body[i])) i++;
  return body.length - i >= 3 && body.subarray(i, i + 3).equals(UTF8_BOM);
}

/**
 * Why a body cannot be read as sent, before any of it is: a content coding (ingest reads bytes as
 * they are; a gzip body was judged as broken JSON and a `br` label on plain JSON accepted), a
 * transfer coding other than chunked (Node removes the chunking only: `gzip, chunked` would bring
 * the gzip bytes back), or a charset other than UTF-8. Undefined when readable.
 */
function unreadableBody(contentEncoding: string | undefined, contentType: string | undefined, transferEncoding: string | undefined, hasBody: boolean): string | undefined {
  // Before a `100 Continue` invites the body: the media type's 415 came only after the client
  // had been asked for it (and its reservation held while the refused body was read away).
  if (contentType === undefined && hasBody) return 'a body needs a Content-Type';
  if (contentType !== undefined && !SUPPORTED_TYPES.includes(mediaTypeOf(contentType))) return `Content-Type ${JSON.stringify(mediaTypeOf(contentType).slice(0, 100))} is not accepted`;
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  if (codings.length > 0) return `Content-Encoding ${codings.join(', ')} is not accepted: send the body uncompressed`;
  const transfer = (transferEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'chunked');
  if (transfer.length > 0) return `Transfer-Encoding ${transfer.join(', ')} is not accepted: send the body uncompressed (chunked alone is fine)`;
  // JSON is UTF-8 (RFC 8259 §8.1): US-ASCII labels are UTF-8 too; Avro is binary, a charset means nothing there.
  if (AVRO_TYPES.includes(mediaTypeOf(contentType))) return undefined;
  const params = (contentType ?? '').split(';').slice(1);
  const charset = /^\s*charset\s*=\s*"?([^";\s]+)/i.exec(params.find((p) => /^\s*charset\s*=/i.test(p)) ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && !['utf-8', 'utf8', 'us-ascii'].includes(charset)) return `charset ${charset} is not accepted: send UTF-8`;
  return undefined;
}

/**
 * The caller's trace context: its `traceparent` only. A client's `tracestate` (vendor data, up to
 * 512 bytes) would otherwise be inherited by the request's span and copied into the headers of
 * every record it sends, through validate onto the valid topic.
 */
function callerTraceContext(traceparent: string | string[] | undefined): ReturnType<typeof extractTraceContext> {
  return extractTraceContext(typeof traceparent === 'string' ? { traceparent } : {});
}
