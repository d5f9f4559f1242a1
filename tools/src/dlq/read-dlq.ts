import { randomBytes } from 'node:crypto';
import { BatchConsumer, KafkaAdmin, type KafkaSecurity, type TopicPartitionOffset } from '@sluice/kafka';
import type { DlqMessage } from './dlq-record';

/** How {@link scanTopic} reads. */
export interface ScanOptions {
  /** read_committed stops at the last stable offsets (validate writes the DLQ in transactions). */
  readonly isolation: 'read_committed' | 'read_uncommitted';
  /** Fail when no partition makes progress for this long, ms (not a bound on the whole scan). */
  readonly idleTimeoutMs: number;
  /**
   * Read only these partitions, each from `from` through `to` (offsets, inclusive), instead of
   * every partition from its start to its end: a `show`, or the positions an `--at` names.
   */
  readonly ranges?: ReadonlyMap<number, { readonly from: number; readonly to: number }>;
  /** TLS and SASL of a secured cluster (the KAFKA_SECURITY_* settings the services read). */
  readonly security?: KafkaSecurity;
}

/**
 * Reads a topic as it is now, up to its end offsets taken first (the last stable offsets under
 * read_committed, the high watermarks under read_uncommitted), handing each message to
 * `onMessage` (awaited) in the order each partition holds them, and keeping none: a DLQ of millions of
 * records is read in constant memory. `onMessage` returning false ends the scan early. A
 * throw-away consumer group reads; nothing is committed. A partition whose records have all
 * expired (its start offset at its end) has nothing to wait for.
 */
export async function scanTopic(
  brokers: string,
  topic: string,
  options: ScanOptions,
  onMessage: (m: DlqMessage) => boolean | void | Promise<boolean | void>,
): Promise<void> {
  const readCommitted = options.isolation === 'read_committed';
  const admin = new KafkaAdmin({ brokers, security: options.security, clientId: 'sluice-dlq-tool' });
  let starts: Map<string, number>;
  let ends: Map<string, number>;
  let partitions: { topic: string; partition: number }[];
  try {
    const [described] = await admin.describeTopics([topic]);
    partitions = Array.from({ length: described.partitions }, (_, partition) => ({ topic, partition }));
    ends = await admin.fetchEndOffsets(partitions, readCommitted);
    starts = await admin.fetchStartOffsets(partitions, readCommitted);
  } finally {
    await admin.close();
  }
  const key = (partition: number) => `${topic}:${partition}`;
  const first = (partition: number) => Math.max(options.ranges?.get(partition)?.from ?? 0, starts.get(key(partition)) ?? 0);
  /** Per partition still to read, the offset it ends before. */
  const pending = new Map<number, number>();
  /** Per partition, the offset after the last record handed to `onMessage`. */
  const readUpTo = new Map<number, number>();
  for (const { partition } of partitions) {
    const range = options.ranges?.get(partition);
    if (options.ranges !== undefined && range === undefined) continue;
    const end = Math.min(ends.get(key(partition)) ?? 0, range === undefined ? Infinity : range.to + 1);
    if (first(partition) < end) pending.set(partition, end);
  }
  if (pending.size === 0) return;

  const consumer = new BatchConsumer({
    brokers,
    security: options.security,
    clientId: 'sluice-dlq-tool',
    groupId: `sluice-dlq-tool-${randomBytes(6).toString('hex')}`,
    topics: [topic],
    autoOffsetReset: 'earliest',
    isolationLevel: options.isolation,
    maxBatchMessages: 5000,
    maxBatchWaitMs: 200,
    // Each partition starts where the scan wants it, or where it got to when the group assigns it
    // again (a rejoin mid-scan re-delivered what was read: counted twice, replayed twice); one
    // with nothing to read starts at its end.
    onAssign: (assigned): TopicPartitionOffset[] =>
      assigned.map((p) => ({ ...p, offset: pending.has(p.partition) ? (readUpTo.get(p.partition) ?? first(p.partition)) : (ends.get(key(p.partition)) ?? 0) })),
  });
  await consumer.connect();
  try {
    // Progress is a record of a partition still being read, or a partition finished; records
    // past the end or of finished partitions (the DLQ keeps growing) are not. The clock restarts
    // after `onMessage` ran, so time spent there (a replay's sends) is not counted as idle.
    let idleSince = Date.now();
    while (pending.size > 0) {
      if (Date.now() - idleSince > options.idleTimeoutMs) {
        throw new Error(`DLQ_READ_TIMEOUT: partitions ${[...pending.keys()].join(',')} made no progress for ${options.idleTimeoutMs} ms`);
      }
      let progressed = false;
      for (const m of await consumer.poll()) {
        const end = pending.get(m.partition);
        if (end === undefined || m.offset >= end) continue;
        if (m.offset < (readUpTo.get(m.partition) ?? 0)) continue;
        progressed = true;
        readUpTo.set(m.partition, m.offset + 1);
        const message: DlqMessage = { partition: m.partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers };
        if (m.repeatedHeaders !== undefined) message.repeatedHeaders = m.repeatedHeaders;
        if ((await onMessage(message)) === false) return;
      }
      // Positions pass transaction markers too, which data offsets alone would never reach.
      for (const lag of consumer.lag()) {
        const end = pending.get(lag.partition);
        if (end !== undefined && lag.nextOffset >= end) {
          pending.delete(lag.partition);
          progressed = true;
        }
      }
      if (progressed) idleSince = Date.now();
    }
  } finally {
    await consumer.close();
  }
}

/**
 * The whole DLQ topic as it is now, in memory, sorted by partition and offset (for audits of
 * test-sized topics; the DLQ tool scans instead).
 */
export function readDlq(brokers: string, topic: string, timeoutMs = 60_000): Promise<DlqMessage[]> {
  return readTopic(brokers, topic, timeoutMs, 'read_committed');
}

/** A whole topic as it is now, in memory (see {@link scanTopic}). */
export async function readTopic(brokers: string, topic: string, timeoutMs: number, isolation: 'read_committed' | 'read_uncommitted'): Promise<DlqMessage[]> {
  const out: DlqMessage[] = [];
  await scanTopic(brokers, topic, { isolation, idleTimeoutMs: timeoutMs }, (m) => void out.push(m));
  return out.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
