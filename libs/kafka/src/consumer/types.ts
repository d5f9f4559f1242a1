import type { PartitionRef } from '../channels';

export type { PartitionRef };

/** A partition and an offset. For commits, seeks and assignments: the NEXT offset to read. */
export interface TopicPartitionOffset extends PartitionRef {
  offset: number;
}

/** One consumed message. */
export interface ConsumedMessage {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  /** Record timestamp, ms since epoch. */
  timestamp?: number;
  /** Headers by name; a name the record repeats keeps its last value here (see repeatedHeaders). */
  headers: Record<string, Buffer>;
  /**
   * Every value, in order, of each header name the record repeats; absent when no name repeats
   * (nearly always: nothing is built then). For whoever must copy a record whole, like the DLQ.
   */
  repeatedHeaders?: Record<string, Buffer[]>;
  /** Payload size, bytes. */
  size: number;
}

/** Per-partition lag: messages between the next offset to read and the high watermark. */
export interface PartitionLag extends PartitionRef {
  nextOffset: number;
  highWatermark: number;
  lag: number;
}
