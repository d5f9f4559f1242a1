/**
 * Library events on `node:diagnostics_channel`, so libs/telemetry can turn them into metrics
 * without libs/kafka depending on OpenTelemetry. Publishing is free when nobody subscribes.
 */
import diagnostics from 'node:diagnostics_channel';

/** Channel names, `sluice:kafka:<event>`. Each channel's message type is documented beside it. */
export const KAFKA_CHANNELS = {
  /** {@link ProduceAckedEvent}: a send/sendBatch whose every message the broker acknowledged. */
  produceAcked: 'sluice:kafka:produce-acked',
  /** {@link ProduceFailedEvent}: a send/sendBatch with at least one failed message. */
  produceFailed: 'sluice:kafka:produce-failed',
  /** {@link ProducerQueueEvent}: a KafkaProducer's unacknowledged messages, when a send enqueues and when it settles. */
  producerQueue: 'sluice:kafka:producer-queue',
  /** {@link ConsumerBatchEvent}: a batch handed to the application. */
  consumerBatch: 'sluice:kafka:consumer-batch',
  /** {@link PartitionsEvent}: partitions assigned to this consumer. */
  assigned: 'sluice:kafka:assigned',
  /** {@link PartitionsEvent}: partitions revoked from this consumer. */
  revoked: 'sluice:kafka:revoked',
  /** {@link PartitionsEvent}: partitions paused (backpressure). */
  paused: 'sluice:kafka:paused',
  /** {@link PartitionsEvent}: partitions resumed. */
  resumed: 'sluice:kafka:resumed',
  /** {@link OffsetsCommittedEvent}: consumer offsets committed (directly or in a transaction). */
  offsetsCommitted: 'sluice:kafka:offsets-committed',
  /** {@link TransactionEvent}: a transaction committed. */
  transactionCommitted: 'sluice:kafka:transaction-committed',
  /** {@link TransactionEvent}: a transaction aborted (`code` says why). */
  transactionAborted: 'sluice:kafka:transaction-aborted',
  /** {@link LagEvent}: consumer lag of one partition, in messages. */
  lag: 'sluice:kafka:lag',
  /** {@link ClientErrorEvent}: an asynchronous client error (broker down, fatal error). */
  clientError: 'sluice:kafka:client-error',
} as const;

/** A channel name of libs/kafka. */
export type KafkaChannel = (typeof KAFKA_CHANNELS)[keyof typeof KAFKA_CHANNELS];

/** A partition of a topic. */
export interface PartitionRef {
  topic: string;
  partition: number;
}

/** Message of `producerQueue`. */
export interface ProducerQueueEvent {
  clientId: string;
  /** Messages handed to librdkafka whose delivery report has not arrived yet. */
  depth: number;
}

/** Message of `produceAcked`. `latencyMs` runs from enqueue of the first message to the last ack. */
export interface ProduceAckedEvent {
  clientId: string;
  count: number;
  bytes: number;
  latencyMs: number;
}
/** Message of `produceFailed`. */
export interface ProduceFailedEvent {
  clientId: string;
  count: number;
  failed: number;
  code: string;
}
/** Message of `consumerBatch`. `waitMs` is the time spent polling for it. */
export interface ConsumerBatchEvent {
  clientId: string;
  groupId: string;
  count: number;
  bytes: number;
  waitMs: number;
}
/** Message of `assigned`, `revoked`, `paused`, `resumed`. */
export interface PartitionsEvent {
  clientId: string;
  groupId: string;
  partitions: PartitionRef[];
}
/** Message of `offsetsCommitted`. Offsets are the next offsets to read. */
export interface OffsetsCommittedEvent {
  clientId: string;
  groupId: string;
  offsets: Array<PartitionRef & { offset: number }>;
  transactional: boolean;
}
/** Message of `transactionCommitted` / `transactionAborted`. */
export interface TransactionEvent {
  transactionalId: string;
  inputCount: number;
  outputCount: number;
  latencyMs: number;
  code?: string;
}
/** Message of `lag`: `highWatermark - nextOffset`, never negative. */
export interface LagEvent {
  groupId: string;
  topic: string;
  partition: number;
  lag: number;
}
/** Message of `clientError`. */
export interface ClientErrorEvent {
  clientId: string;
  code: string;
  retryable: boolean;
  message: string;
}

const channels = new Map<string, diagnostics.Channel>();

/** True when someone listens on `name` (lets a publisher skip computing the payload). */
export function hasSubscribers(name: KafkaChannel): boolean {
  return diagnostics.hasSubscribers(name);
}

/** Publishes `message` on `name` if anyone listens (internal helper of the lib). */
export function publish(name: KafkaChannel, message: object): void {
  let channel = channels.get(name);
  if (channel === undefined) {
    channel = diagnostics.channel(name);
    channels.set(name, channel);
  }
  if (channel.hasSubscribers) channel.publish(message);
}
