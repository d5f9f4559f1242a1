import { KafkaAdmin, KafkaProducer, PRODUCER_DEFAULTS, kafkaConnectionFromConfig } from '@sluice/kafka';
import type { Logger, Telemetry } from '@sluice/telemetry';
import { buildApp, type IngestApp } from './app';
import type { IngestConfig } from './config';
import { KafkaPublisher } from './delivery/kafka-publisher';
import { AvroDecoder, CONTRACTS, RAW_TOPIC, SchemaIdLearner, createRegistryClient, registryAuth } from '@sluice/contracts';

/**
 * The largest event that fits a record batch of `topicLimit` bytes (the raw topic's
 * max.message.bytes) with its key, headers and batch framing, compressed or not (lz4 can grow
 * incompressible bytes by a little): 2 % and 1 KiB below the limit, at least 1 byte.
 */
export function eventBytesWithin(topicLimit: number): number {
  return Math.max(1, Math.floor(topicLimit * 0.98) - 1024);
}

/** The raw topic's max.message.bytes, or undefined (logged) when it cannot be read now: the producer's defaults then apply. */
async function rawTopicMessageLimit(admin: KafkaAdmin, rawTopic: string, logger?: Logger): Promise<number | undefined> {
  try {
    const value = Number((await admin.describeTopicConfigs([rawTopic])).get(rawTopic)?.['max.message.bytes']?.value);
    return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  } catch (err) {
    logger?.warn({ err, rawTopic }, 'could not read the raw topic max.message.bytes; using the producer defaults');
    return undefined;
  }
}

/** librdkafka's largest `queue.buffering.max.kbytes`. */
const MAX_QUEUE_KBYTES = 2_147_483_647;

/**
 * librdkafka's queue bound in KiB (`queue.buffering.max.kbytes`), kept above anything ingest can
 * hand it: every queued event is part of a request body the in-flight budget counts, and a
 * handler waits for its events' delivery before its reservation ends. Below the budget (the
 * client's default of 128 MiB against ingest's 256 MiB), the queue could fill by bytes partway
 * through a batch: part of the batch enqueued and delivered, the request answered 429, and the
 * whole batch sent again. The margin covers keys and headers (at most 1 KiB per message).
 */
export function producerQueueKbytes(maxInFlightBytes: number, maxQueueMessages: number): number {
  return Math.min(MAX_QUEUE_KBYTES, Math.ceil((maxInFlightBytes + maxQueueMessages * 1024) / 1024));
}

/** A started ingest: the HTTP app with its Kafka clients, and how to stop it all. */
export interface IngestRuntime extends IngestApp {
  /** Drains: refuse new requests, finish in-flight ones, flush the producer, close clients. */
  close(): Promise<void>;
  /** False once the producer is wedged (see KafkaPublisher.isLive): main.ts exits. */
  isLive(): boolean;
}

/**
 * Connects the Kafka clients and builds the app (not listening yet). Used by main.ts and by the
 * integration tests, so both run the same wiring.
 */
export async function createIngest(config: IngestConfig, logger?: Logger, telemetry?: Pick<Telemetry, 'metrics' | 'withSpan'>): Promise<IngestRuntime> {
  const rawTopic = config.rawTopic || RAW_TOPIC.name;
  // A delivery may fail legitimately for one delivery timeout after the broker is back.
  if (config.wedgeAfterMs < 2 * config.deliveryTimeoutMs) {
    throw new RangeError(`INGEST_WEDGE_AFTER_MS (${config.wedgeAfterMs}) must be at least twice INGEST_DELIVERY_TIMEOUT_MS (${config.deliveryTimeoutMs})`);
  }
  // Settings that do not fit together stop the start before any client is made.
  const kafka = kafkaConnectionFromConfig(config);
  const registryCredentials = registryAuth(config.schemaRegistryUsername, config.schemaRegistryPassword);
  const admin = new KafkaAdmin({ ...kafka, clientId: 'sluice-ingest-probe', requestTimeoutMs: Math.max(500, config.probeIntervalMs) });
  // The broker refuses a record batch over the raw topic's max.message.bytes, for good: batches
  // are built below it, and an event that cannot fit is refused at the edge with the limit.
  const topicLimit = await rawTopicMessageLimit(admin, rawTopic, logger);
  const maxEventBytes = topicLimit === undefined ? config.maxEventBytes : Math.min(config.maxEventBytes, eventBytesWithin(topicLimit));
  if (maxEventBytes < config.maxEventBytes) {
    logger?.warn({ configured: config.maxEventBytes, topicMaxMessageBytes: topicLimit, maxEventBytes }, 'raw topic max.message.bytes is below INGEST_MAX_EVENT_BYTES: larger events are refused');
  }
  const producer = new KafkaProducer({
    ...kafka,
    clientId: 'sluice-ingest',
    deliveryTimeoutMs: config.deliveryTimeoutMs,
    maxQueueMessages: config.maxQueueMessages,
    maxQueueKbytes: producerQueueKbytes(config.maxInFlightBytes, config.maxQueueMessages),
    lingerMs: 5,
    ...(topicLimit === undefined ? {} : { batchBytes: Math.min(PRODUCER_DEFAULTS.batchBytes, topicLimit) }),
  });
  try {
    await producer.connect();
  } catch (err) {
    // Nothing started: release both clients, or their native handles keep retrying the brokers.
    await producer.close(0).catch(() => undefined);
    await admin.close().catch(() => undefined);
    throw err;
  }
  const publisher = new KafkaPublisher(producer, {
    probe: async () => {
      const [raw] = await admin.describeTopics([rawTopic]);
      return { leaderlessPartitions: raw?.leaderlessPartitions ?? [] };
    },
    probeIntervalMs: config.probeIntervalMs,
    wedgeAfterMs: config.wedgeAfterMs,
    onAvailabilityChange: (available, reason) => logger?.warn({ available, reason }, 'Kafka availability changed'),
  });
  publisher.start();

  const built = buildApp({
    publisher,
    apiKeys: config.apiKeys,
    rawTopic,
    limits: {
      maxBodyBytes: config.maxBodyBytes,
      maxBatchEvents: config.maxBatchEvents,
      maxEventBytes,
      maxDepth: config.maxDepth,
      maxFutureSkewMs: config.maxFutureSkewMs,
      maxEventAgeMs: config.maxEventAgeMs,
      maxInFlightBytes: config.maxInFlightBytes,
      maxInFlightBytesPerProducer: Math.floor((config.maxInFlightBytes * config.maxInFlightPercentPerProducer) / 100),
      requestTimeoutMs: config.requestTimeoutMs,
    },
    retryAfterSeconds: config.retryAfterSeconds,
    schemaIds: config.schemaRegistryUrl
      ? new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), createRegistryClient({
          url: config.schemaRegistryUrl,
          fetch: globalThis.fetch,
          retries: 1,
          auth: registryCredentials,
        }))
      : undefined,
    isLive: () => publisher.isLive(),
    logger,
    telemetry,
  });

  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    built.beginShutdown();
    // app.close() stops accepting connections and waits for every open one to end. Keep-alive
    // connections that finish a request during the drain become idle later, so they are
    // reaped repeatedly; after the timeout the rest are cut.
    const server = built.app.server;
    const reaper = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
    try {
      await built.app.close();
    } finally {
      clearInterval(reaper);
      clearTimeout(deadline);
    }
    publisher.stop();
    await producer.close(config.shutdownTimeoutMs);
    await admin.close();
  };
  return { ...built, close: () => (closing ??= close()), isLive: () => publisher.isLive() };
}
