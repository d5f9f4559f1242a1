/**
 * Topic config describe/alter spoken directly on the Kafka wire protocol.
 *
 * Why: @confluentinc/kafka-javascript 1.10.1 exposes neither DescribeConfigs nor
 * (Incremental)AlterConfigs in any of its APIs, and topic provisioning must compare and fix
 * `retention.ms` & co. Only the two requests are implemented, each on its own connection to a
 * bootstrap broker (any broker answers topic-config requests and forwards alters to the
 * controller), over TLS and SASL as the client's security settings say (wire/connection.ts).
 */
import { kafkaError, translateKafkaError } from '../errors';
import { Writer, type Reader } from '../wire/codec';
import { WireConnection, isAuthenticationRefusal, type WireOptions } from '../wire/connection';

export type { WireOptions } from '../wire/connection';

const API_DESCRIBE_CONFIGS = 32;
const API_INCREMENTAL_ALTER_CONFIGS = 44;
const RESOURCE_TOPIC = 2;

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

/** Asks each bootstrap broker in turn; all failing, the first refusal of the login wins over the last error. */
async function request(options: WireOptions, apiKey: number, version: number, body: Buffer): Promise<Reader> {
  let lastError: unknown;
  let refusal: unknown;
  for (const broker of options.brokers) {
    try {
      return await requestOne(broker, options, apiKey, version, body);
    } catch (err) {
      lastError = err;
      if (refusal === undefined && isAuthenticationRefusal(err)) refusal = err;
    }
  }
  throw translateKafkaError(refusal ?? lastError ?? new Error('no broker'), { operation: 'admin.configs', brokers: options.brokers.join(',') });
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

async function requestOne(broker: string, options: WireOptions, apiKey: number, version: number, body: Buffer): Promise<Reader> {
  const connection = await WireConnection.open(broker, options);
  try {
    return await connection.request(apiKey, version, body);
  } finally {
    connection.close();
  }
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
