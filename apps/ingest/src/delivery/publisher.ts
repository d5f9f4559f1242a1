/** One record for the raw topic. */
export interface RawRecord {
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

/**
 * Where ingest sends accepted events. The production implementation wraps the idempotent Kafka
 * producer of @sluice/kafka (kafka-publisher.ts).
 */
export interface EventPublisher {
  /** True when `count` more records fit in the producer queue; false → answer 429. */
  hasCapacity(count: number): boolean;
  /**
   * Resolves only when the broker acknowledged every record (acks=all). Rejects with a
   * SluiceError: `KAFKA_QUEUE_FULL` means overloaded (429), anything else unavailable (503).
   */
  publish(topic: string, records: RawRecord[]): Promise<void>;
  /** False while the broker is known to be unreachable: new requests are refused with 503. */
  isAvailable(): boolean;
}
