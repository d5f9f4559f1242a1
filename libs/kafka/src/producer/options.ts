import type { ConnectionOptions } from '../connection';

/** Compression codecs librdkafka supports. */
export type Compression = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

/**
 * Producer settings. Invariants not configurable: `acks=all`, `enable.idempotence=true`,
 * `partitioner=murmur2_random` (the Java client's default, see {@link partitionForKey}).
 */
export interface ProducerOptions extends ConnectionOptions {
  /** Batch compression; default `lz4`. */
  compression?: Compression;
  /** How long to wait to fill a batch (librdkafka `linger.ms`), ms; default 5. */
  lingerMs?: number;
  /** Max bytes of one partition batch (`batch.size`); default 1 000 000. */
  batchBytes?: number;
  /** Max messages of one partition batch (`batch.num.messages`); default 10 000. */
  batchMessages?: number;
  /**
   * Max messages waiting for a delivery report (`queue.buffering.max.messages`); default 100 000.
   * Past it `send` fails fast with KAFKA_QUEUE_FULL (retryable): the HTTP tier answers 429.
   */
  maxQueueMessages?: number;
  /** Max KiB waiting for a delivery report (`queue.buffering.max.kbytes`); default 131 072 (128 MiB). */
  maxQueueKbytes?: number;
  /** How long librdkafka retries one message before failing it (`message.timeout.ms`); default 30 000. */
  deliveryTimeoutMs?: number;
  /**
   * How long a message to a topic the cluster does not know is held before it fails with
   * KAFKA_TOPIC_NOT_FOUND (`topic.metadata.propagation.max.ms`), ms; default 10 000.
   */
  unknownTopicTimeoutMs?: number;
}

/** Defaults of {@link ProducerOptions}. */
export const PRODUCER_DEFAULTS = Object.freeze({
  compression: 'lz4' as Compression,
  lingerMs: 5,
  batchBytes: 1_000_000,
  batchMessages: 10_000,
  maxQueueMessages: 100_000,
  maxQueueKbytes: 131_072,
  deliveryTimeoutMs: 30_000,
  unknownTopicTimeoutMs: 10_000,
});
