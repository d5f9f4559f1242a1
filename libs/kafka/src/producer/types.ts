import type { KafkaError } from '../errors';

/** One message to produce. */
export interface ProducerRecord {
  topic: string;
  /** Partitioning key; null/undefined spreads messages randomly. Strings are UTF-8 encoded. */
  key?: Buffer | string | null;
  /** Payload; null is a tombstone. */
  value: Buffer | string | null;
  /** Explicit partition; default: murmur2 of the key. */
  partition?: number;
  /** Record timestamp, ms since epoch; default: the producer's clock. */
  timestamp?: number;
  /** Headers; values are strings or bytes, and a list sends its name once per value, in order. */
  headers?: Readonly<Record<string, string | Buffer | readonly (string | Buffer)[]>>;
}

/** Where the broker stored one message. */
export interface DeliveryReport {
  topic: string;
  partition: number;
  offset: number;
  /** Record timestamp, ms since epoch, if the broker reported one. */
  timestamp?: number;
}

/** A record the broker acknowledged (one outcome of `sendBatchSettled`). */
export interface SendSuccess {
  readonly ok: true;
  readonly report: DeliveryReport;
}

/** A record that was not acknowledged (one outcome of `sendBatchSettled`); `error.retryable` says whether to retry it. */
export interface SendFailure {
  readonly ok: false;
  readonly error: KafkaError;
}

/** Per-record outcome of `KafkaProducer.sendBatchSettled`. */
export type SendOutcome = SendSuccess | SendFailure;
