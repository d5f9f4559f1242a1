/**
 * Topic config describe/alter spoken directly on the Kafka wire protocol.
 *
 * Why: @confluentinc/kafka-javascript 1.10.1 exposes neither DescribeConfigs nor
 * (Incremental)AlterConfigs in any of its APIs, and topic provisioning must compare and fix
 * `retention.ms` & co. Only the two requests are implemented, on plaintext connections to a
 * bootstrap broker (any broker answers topic-config requests and forwards alters to the
 * controller). SASL/TLS clusters need these two calls from another tool until the client has them.
 */
import net from 'node:net';
import { kafkaError, translateKafkaError } from '../errors';

const API_DESCRIBE_CONFIGS = 32;
const API_INCREMENTAL_ALTER_CONFIGS = 44;
const RESOURCE_TOPIC = 2;
// A config description of a few topics is kilobytes; anything near this is not a Kafka broker.
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Where a config value comes from (Kafka `ConfigSource`). */
export const CONFIG_SOURCES = [
  'UNKNOWN',
  'DYNAMIC_TOPIC_CONFIG',
  'DYNAMIC_BROKER_CONFIG',
  'DYNAMIC_DEFAULT_BROKER_CONFIG',
  'STATIC_BROKER_CONFIG',
  'DEFAULT_CONFIG',
  'DYNAMIC_BROKER_LOGGER_CONFIG',
  'CLIENT_METRICS_CONFIG',
  'GROUP_CONFIG',
] as const;

/** One config entry of a topic. */
export interface ConfigEntry {
  value: string | null;
  source: (typeof CONFIG_SOURCES)[number];
  /** True when set on the topic itself (not inherited from the broker or the default). */
  isTopicOverride: boolean;
  readOnly: boolean;
  sensitive: boolean;
}

class Writer {
  private readonly parts: Buffer[] = [];
  int8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeInt8(v);
    this.parts.push(b);
    return this;
  }
  int16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }
  int32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  string(v: string | null): this {
    if (v === null) return this.int16(-1);
    const bytes = Buffer.from(v, 'utf8');
    this.int16(bytes.length);
    this.parts.push(bytes);
    return this;
  }
  array<T>(items: readonly T[] | null, write: (w: this, item: T) => void): this {
    if (items === null) return this.int32(-1);
    this.int32(items.length);
    for (const item of items) write(this, item);
    return this;
  }
  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}
  int8(): number {
    return this.buf.readInt8(this.advance(1));
  }
  bool(): boolean {
    return this.int8() !== 0;
  }
  int16(): number {
    return this.buf.readInt16BE(this.advance(2));
  }
  int32(): number {
    return this.buf.readInt32BE(this.advance(4));
  }
  string(): string | null {
    const len = this.int16();
    if (len < 0) return null;
    const start = this.advance(len);
    return this.buf.toString('utf8', start, start + len);
  }
  array<T>(read: (r: Reader) => T): T[] {
    const n = this.int32();
    const out: T[] = [];
    for (let i = 0; i < n; i++) out.push(read(this));
    return out;
  }
  private advance(n: number): number {
    if (this.pos + n > this.buf.length) throw new RangeError('truncated Kafka response');
    const at = this.pos;
    this.pos += n;
    return at;
  }
}

/** Options of one wire request. */
export interface WireOptions {
  brokers: readonly string[];
  clientId: string;
  timeoutMs: number;
}

async function request(options: WireOptions, apiKey: number, version: number, body: Buffer): Promise<Reader> {
  let lastError: unknown;
  for (const broker of options.brokers) {
    try {
      return await requestOne(broker, options, apiKey, version, body);
    } catch (err) {
      lastError = err;
    }
  }
  throw translateKafkaError(lastError ?? new Error('no broker'), { operation: 'admin.configs', brokers: options.brokers.join(',') });
}

/** Runs a response parser; a malformed response becomes a KafkaError, not a RangeError. */
function parse<T>(operation: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw kafkaError('KAFKA_UNKNOWN', `${operation}: malformed response from broker (${(err as Error).message})`, {
      cause: err,
      details: { operation },
    });
  }
}

function requestOne(broker: string, options: WireOptions, apiKey: number, version: number, body: Buffer): Promise<Reader> {
  const colon = broker.lastIndexOf(':');
  const host = broker.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(broker.slice(colon + 1));
  const correlationId = 1;
  const header = new Writer().int16(apiKey).int16(version).int32(correlationId).string(options.clientId).build();
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length);
  return new Promise<Reader>((resolve, reject) => {
    const socket = net.connect({ host, port });
    const chunks: Buffer[] = [];
    let received = 0;
    const fail = (err: unknown) => {
      socket.destroy();
      // Socket-level failures are "broker unreachable" (librdkafka's ERR__TRANSPORT, -195).
      reject(Object.assign(err instanceof Error ? err : new Error(String(err)), { code: -195 }));
    };
    socket.setTimeout(options.timeoutMs, () => fail(new Error(`no answer from ${broker} within ${options.timeoutMs} ms`)));
    socket.on('error', fail);
    socket.on('connect', () => socket.write(Buffer.concat([size, header, body])));
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      received += chunk.length;
      if (received < 4) return;
      const all = Buffer.concat(chunks);
      const length = all.readInt32BE(0);
      if (length < 4 || length > MAX_RESPONSE_BYTES) return fail(new Error(`implausible response size ${length} from ${broker}`));
      if (all.length < 4 + length) return;
      socket.end();
      const reader = new Reader(all.subarray(4, 4 + length));
      if (reader.int32() !== correlationId) return reject(new Error('Kafka response correlation id mismatch'));
      resolve(reader);
    });
    socket.on('close', () => reject(Object.assign(new Error(`connection to ${broker} closed before a response`), { code: -195 })));
  });
}

function brokerError(code: number, message: string | null, topic: string, operation: string): Error {
  return translateKafkaError({ code, message: message ?? undefined }, { operation, topic });
}

/** DescribeConfigs v1 for topics: every config entry (with its source) per topic. */
export async function describeTopicConfigs(
  options: WireOptions,
  topics: readonly string[],
): Promise<Map<string, Record<string, ConfigEntry>>> {
  const body = new Writer()
    .array(topics, (w, t) => w.int8(RESOURCE_TOPIC).string(t).array<string>(null, () => undefined))
    .int8(0)
    .build();
  const r = await request(options, API_DESCRIBE_CONFIGS, 1, body);
  const out = new Map<string, Record<string, ConfigEntry>>();
  const results = parse('admin.describeTopicConfigs', () => {
    r.int32(); // throttle_time_ms
    return r.array((rr) => {
      const errorCode = rr.int16();
      const errorMessage = rr.string();
      rr.int8();
      const name = rr.string() ?? '';
      const entries: Record<string, ConfigEntry> = {};
      rr.array((cr) => {
        const key = cr.string() ?? '';
        const value = cr.string();
        const readOnly = cr.bool();
        const sourceId = cr.int8();
        const sensitive = cr.bool();
        cr.array((sr) => [sr.string(), sr.string(), sr.int8()]);
        const source = CONFIG_SOURCES[sourceId] ?? 'UNKNOWN';
        entries[key] = { value, source, isTopicOverride: source === 'DYNAMIC_TOPIC_CONFIG', readOnly, sensitive };
      });
      return { errorCode, errorMessage, name, entries };
    });
  });
  for (const res of results) {
    if (res.errorCode !== 0) throw brokerError(res.errorCode, res.errorMessage, res.name, 'admin.describeTopicConfigs');
    out.set(res.name, res.entries);
  }
  return out;
}

/** IncrementalAlterConfigs v0 for one topic: SET each given key (other keys untouched). */
export async function alterTopicConfigs(options: WireOptions, topic: string, set: Readonly<Record<string, string>>): Promise<void> {
  const entries = Object.entries(set);
  if (entries.length === 0) return;
  const body = new Writer()
    .array([topic], (w, t) =>
      w
        .int8(RESOURCE_TOPIC)
        .string(t)
        .array(entries, (cw, [k, v]) => cw.string(k).int8(0).string(v)),
    )
    .int8(0)
    .build();
  const r = await request(options, API_INCREMENTAL_ALTER_CONFIGS, 0, body);
  const results = parse('admin.alterTopicConfigs', () => {
    r.int32(); // throttle_time_ms
    return r.array((rr) => ({ errorCode: rr.int16(), errorMessage: rr.string(), type: rr.int8(), name: rr.string() ?? '' }));
  });
  if (results.length !== 1) throw kafkaError('KAFKA_UNKNOWN', `admin.alterTopicConfigs: expected 1 result, got ${results.length}`);
  const [res] = results;
  if (res.errorCode !== 0) throw brokerError(res.errorCode, res.errorMessage, topic, 'admin.alterTopicConfigs');
}
