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
  /** Headers; values are strings or bytes. Repeated keys are not supported by this API. */
  headers?: Readonly<Record<string, string | Buffer>>;
}

/** Where the broker stored one message. */
export interface DeliveryReport {
  topic: string;
  partition: number;
  offset: number;
  /** Record timestamp, ms since epoch, if the broker reported one. */
  timestamp?: number;
}
