/**
 * One connection to one broker for the requests libs/kafka speaks itself (admin/config-protocol.ts): TCP or TLS, then the
 * SASL exchange (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) when the security settings ask for it, then
 * size-framed requests answered one at a time. Failures carry librdkafka's numeric codes
 * (transport, SSL, authentication) so errors.ts translates them like the client's own.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { CODES } from '@confluentinc/kafka-javascript';
import { brokerList, type ConnectionOptions } from '../connection';
import { translateKafkaError, type KafkaError } from '../errors';
import { usesTls, type KafkaSecurity } from '../security';
import { scramClient, scramHash } from './scram';
import { Reader, Writer } from './codec';

const API_SASL_HANDSHAKE = 17;
const API_VERSIONS = 18;
const API_SASL_AUTHENTICATE = 36;
// A config description of a few topics is kilobytes; anything near this is not a Kafka broker.
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
// Node's codes of a certificate that failed verification (OpenSSL's X509_V_ERR_* names).
const CERTIFICATE_ERROR = /CERT|SIGNATURE|ISSUER|SELF_SIGNED|_CA$|HOSTNAME|PATH_LENGTH|INVALID_PURPOSE/;
/** librdkafka's default port, for a broker named without one. */
const DEFAULT_PORT = 9092;

/** Settings of the admin's own connections. */
export interface WireOptions {
  brokers: readonly string[];
  clientId: string;
  timeoutMs: number;
  security?: KafkaSecurity;
}

// Codes that say the credentials, mechanism or certificates were refused.
const AUTHENTICATION_CODES = new Set<number>([
  CODES.ERRORS.ERR__AUTHENTICATION,
  CODES.ERRORS.ERR__SSL,
  CODES.ERRORS.ERR_SASL_AUTHENTICATION_FAILED,
  CODES.ERRORS.ERR_UNSUPPORTED_SASL_MECHANISM,
  CODES.ERRORS.ERR_ILLEGAL_SASL_STATE,
]);

/** Whether `err` says the credentials, mechanism or certificates were refused. */
export function isAuthenticationRefusal(err: unknown): boolean {
  return AUTHENTICATION_CODES.has((err as { code?: number } | undefined)?.code ?? 0);
}

/**
 * A socket error's code: TLS trouble (a certificate that failed verification, OpenSSL errors such
 * as the "bad certificate" alert TLS 1.3 delivers after the client's handshake ended) is ERR__SSL;
 * everything else (refused, reset, unreachable, out of local ports…) is the network's
 * ERR__TRANSPORT, so an outage is never taken for a refusal.
 */
function socketErrorCode(err: NodeJS.ErrnoException & { library?: unknown; reason?: unknown }, secure: boolean): number {
  if (!secure || typeof err.syscall === 'string' || typeof err.errno === 'number') return CODES.ERRORS.ERR__TRANSPORT;
  const code = err.code ?? '';
  const tlsError = code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || CERTIFICATE_ERROR.test(code) || err.library !== undefined || err.reason !== undefined;
  return tlsError ? CODES.ERRORS.ERR__SSL : CODES.ERRORS.ERR__TRANSPORT;
}

/** Host and port of a bootstrap entry (`host:port`, `[v6]:port`, or a host alone on librdkafka's default port). */
function parseBroker(broker: string): { host: string; port: number } {
  const v6 = /^\[(.*)\](?::(\d+))?$/.exec(broker);
  if (v6) return { host: v6[1], port: v6[2] === undefined ? DEFAULT_PORT : Number(v6[2]) };
  const colon = broker.lastIndexOf(':');
  if (colon === -1 || broker.indexOf(':') !== colon) return { host: broker, port: DEFAULT_PORT };
  return { host: broker.slice(0, colon), port: Number(broker.slice(colon + 1)) };
}

/** The wire settings of a client's connection options, each request bounded by `timeoutMs`. */
export function wireOptions(options: ConnectionOptions, timeoutMs: number): WireOptions {
  return { brokers: brokerList(options.brokers).split(','), clientId: options.clientId ?? 'sluice', timeoutMs, security: options.security };
}

/** An Error carrying a librdkafka or broker numeric code, for translateKafkaError. */
function coded(code: number, message: string, cause?: unknown): Error {
  return Object.assign(new Error(message, { cause }), { code });
}

/**
 * The TLS context of `security`. Files are read at every connection, so certificates renewed on
 * disk are picked up. Without a CA file the system's CAs are trusted, as librdkafka does (with
 * Node's bundled ones besides), so this path never refuses a broker the client accepts.
 */
function secureContext(security: KafkaSecurity): tls.SecureContext {
  const settings = security.tls ?? {};
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
  return tls.createSecureContext({
    ca: read(settings.caFile) ?? [...new Set([...tls.getCACertificates('system'), ...tls.getCACertificates('default')])],
    cert: read(settings.certFile),
    key: read(settings.keyFile),
    passphrase: settings.keyPassword,
  });
}

/** A connected, authenticated broker connection; one request in flight at a time. */
export class WireConnection {
  private buffered: Buffer = Buffer.alloc(0);
  private correlationId = 0;
  private pending: { id: number; resolve: (r: Reader) => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;

  private constructor(
    private readonly socket: net.Socket,
    private readonly broker: string,
    private readonly options: WireOptions,
  ) {
    socket.setTimeout(options.timeoutMs, () => this.fail(coded(CODES.ERRORS.ERR__TRANSPORT, `no answer from ${broker} within ${options.timeoutMs} ms`)));
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(coded(socketErrorCode(err, usesTls(options.security)), `connection to ${broker}: ${err.message}`, err)));
    socket.on('close', () => this.fail(coded(CODES.ERRORS.ERR__TRANSPORT, `connection to ${broker} closed before a response`)));
  }

  /** Connects to `broker` (`host:port`), over TLS and through SASL as `options.security` says. */
  static async open(broker: string, options: WireOptions): Promise<WireConnection> {
    const { host, port } = parseBroker(broker);
    const socket = await connectSocket(host, port, broker, options);
    const connection = new WireConnection(socket, broker, options);
    try {
      if (options.security?.sasl !== undefined) await connection.authenticate(options.security);
    } catch (err) {
      connection.close();
      throw err;
    }
    return connection;
  }

  /** Sends one request (header v1) and resolves with its response body after the correlation id. */
  request(apiKey: number, version: number, body: Buffer): Promise<Reader> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = ++this.correlationId;
    const header = new Writer().int16(apiKey).int16(version).int32(id).string(this.options.clientId).build();
    const size = Buffer.alloc(4);
    size.writeInt32BE(header.length + body.length);
    return new Promise<Reader>((resolve, reject) => {
      this.pending = { id, resolve, reject };
      this.socket.write(Buffer.concat([size, header, body]));
    });
  }

  close(): void {
    this.failure ??= coded(CODES.ERRORS.ERR__DESTROY, `connection to ${this.broker} closed`);
    this.socket.destroy();
  }

  private received(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    if (this.buffered.length < 4) return;
    const length = this.buffered.readInt32BE(0);
    if (length < 4 || length > MAX_RESPONSE_BYTES) return this.fail(coded(CODES.ERRORS.ERR__TRANSPORT, `implausible response size ${length} from ${this.broker}`));
    if (this.buffered.length < 4 + length) return;
    const reader = new Reader(this.buffered.subarray(4, 4 + length));
    this.buffered = this.buffered.subarray(4 + length);
    const pending = this.pending;
    this.pending = undefined;
    if (pending === undefined) return this.fail(coded(CODES.ERRORS.ERR__TRANSPORT, `unrequested response from ${this.broker}`));
    if (reader.int32() !== pending.id) {
      pending.reject(new Error('Kafka response correlation id mismatch'));
      return this.close();
    }
    pending.resolve(reader);
  }

  private fail(err: Error): void {
    this.failure ??= err;
    this.socket.destroy();
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(this.failure);
  }

  /** SaslHandshake v1, then SaslAuthenticate v1 rounds (Kafka-framed SASL tokens). */
  private async authenticate(security: KafkaSecurity): Promise<void> {
    const sasl = security.sasl;
    if (sasl === undefined) return;
    const handshake = await this.request(API_SASL_HANDSHAKE, 1, new Writer().string(sasl.mechanism).build());
    const handshakeError = handshake.int16();
    const offered = handshake.array((r) => r.string() ?? '');
    if (handshakeError !== 0) {
      throw coded(handshakeError, `broker ${this.broker} does not offer SASL ${sasl.mechanism} (it offers ${offered.join(', ') || 'none'})`);
    }
    if (sasl.mechanism === 'PLAIN') {
      await this.saslRound(Buffer.from(`\0${sasl.username}\0${sasl.password}`, 'utf8'));
      return;
    }
    const scram = scramClient(scramHash(sasl.mechanism), sasl.username, sasl.password);
    const serverFirst = await this.saslRound(Buffer.from(scram.first, 'utf8'));
    const clientFinal = await this.scramStep(() => scram.final(serverFirst.toString('utf8')));
    const serverFinal = await this.saslRound(Buffer.from(clientFinal, 'utf8'));
    await this.scramStep(async () => scram.verify(serverFinal.toString('utf8')));
  }

  private async scramStep<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      throw coded(CODES.ERRORS.ERR__AUTHENTICATION, `SASL authentication with ${this.broker}: ${(err as Error).message}`, err);
    }
  }

  private async saslRound(token: Buffer): Promise<Buffer> {
    const r = await this.request(API_SASL_AUTHENTICATE, 1, new Writer().bytes(token).build());
    const errorCode = r.int16();
    const message = r.string();
    const answer = r.bytes() ?? Buffer.alloc(0);
    if (errorCode !== 0) throw coded(errorCode, `SASL authentication with ${this.broker} failed: ${message ?? `broker error ${errorCode}`}`);
    return answer;
  }
}

/** A TCP or TLS socket, resolved once connected (and the TLS handshake done). */
function connectSocket(host: string, port: number, broker: string, options: WireOptions): Promise<net.Socket> {
  const security = options.security;
  return new Promise<net.Socket>((resolve, reject) => {
    const secure = usesTls(security);
    let context: tls.SecureContext | undefined;
    try {
      if (secure) context = secureContext(security as KafkaSecurity);
    } catch (err) {
      // An unreadable certificate file or a key that does not open with its passphrase.
      return reject(coded(CODES.ERRORS.ERR__SSL, `TLS settings for ${broker}: ${(err as Error).message}`, err));
    }
    let socket: net.Socket;
    try {
      socket = secure
        ? tls.connect({
            host,
            port,
            secureContext: context,
            servername: net.isIP(host) === 0 ? host : undefined,
            checkServerIdentity: security?.tls?.verifyHostname === false ? () => undefined : tls.checkServerIdentity,
          })
        : net.connect({ host, port });
    } catch (err) {
      // A port out of range and the like: the address, not the credentials.
      return reject(coded(CODES.ERRORS.ERR__TRANSPORT, `connection to ${broker}: ${(err as Error).message}`, err));
    }
    const timer = setTimeout(() => {
      socket.destroy();
      reject(coded(CODES.ERRORS.ERR__TRANSPORT, `no connection to ${broker} within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      const code = socketErrorCode(err, secure);
      reject(coded(code, `${code === CODES.ERRORS.ERR__SSL ? 'TLS handshake' : 'connection'} to ${broker}: ${err.message}`, err));
    });
  });
}

/**
 * Why no connection to the brokers authenticates, if that is the reason: the refusal of the first
 * broker (in bootstrap order) that refused the credentials or certificates, undefined when one
 * answers a request or none refused them (unreachable is not an answer here). The brokers are
 * asked at once, so this takes at most one connection and one request timeout. A request is
 * needed: under TLS 1.3 a broker refuses a missing client certificate only after the client's
 * side of the handshake ended.
 */
async function authenticationRefusal(options: WireOptions): Promise<Error | undefined> {
  const outcomes = await Promise.allSettled(
    options.brokers.map(async (broker) => {
      const connection = await WireConnection.open(broker, options);
      try {
        await connection.request(API_VERSIONS, 0, Buffer.alloc(0));
      } finally {
        connection.close();
      }
    }),
  );
  if (outcomes.some((o) => o.status === 'fulfilled')) return undefined;
  const refused = outcomes.find((o) => o.status === 'rejected' && isAuthenticationRefusal(o.reason));
  return refused === undefined ? undefined : ((refused as PromiseRejectedResult).reason as Error);
}

/** How long a client reuses its last verdict: a probe failing every second asks the brokers twice a minute at most. */
const VERDICT_TTL_MS = 30_000;
const verdicts = new WeakMap<ConnectionOptions, { atMs: number; refusal: Error | undefined }>();

/**
 * `failed`, or on a secured cluster the brokers' refusal of the login when that is why a call
 * found no broker: librdkafka reports a refused login or certificate to its calls only as a
 * timeout or a transport failure (connect, admin requests), so one connection of our own asks.
 * The verdict is kept for {@link VERDICT_TTL_MS} per client (its options object).
 */
export async function explainUnreachable(options: ConnectionOptions, failed: KafkaError, timeoutMs: number): Promise<KafkaError> {
  if (options.security === undefined || options.security.protocol === 'plaintext') return failed;
  if (failed.code !== 'KAFKA_TIMEOUT' && failed.code !== 'KAFKA_BROKER_UNREACHABLE') return failed;
  let verdict = verdicts.get(options);
  if (verdict === undefined || Date.now() - verdict.atMs > VERDICT_TTL_MS) {
    verdict = { atMs: Date.now(), refusal: await authenticationRefusal(wireOptions(options, timeoutMs)) };
    verdicts.set(options, verdict);
  }
  if (verdict.refusal === undefined) return failed;
  const operation = String(failed.details?.operation ?? 'connect');
  return translateKafkaError(verdict.refusal, { operation, after: failed.message });
}
