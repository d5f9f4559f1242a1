import { randomBytes } from 'node:crypto';
import { BatchConsumer, KafkaAdmin } from '@sluice/kafka';
import type { DlqMessage } from './dlq-record';

/**
 * Reads the whole DLQ topic as it is now: end offsets (last stable offsets, since validate
 * writes the DLQ in transactions) are taken first, then a throw-away consumer group reads under
 * read_committed until its position reached them. Commits nothing.
 */
export function readDlq(brokers: string, topic: string, timeoutMs = 60_000): Promise<DlqMessage[]> {
  return readTopic(brokers, topic, timeoutMs, 'read_committed');
}

/**
 * Reads a whole topic as it is now, up to its end offsets (the last stable offsets under
 * read_committed, the high watermarks under read_uncommitted). Commits nothing.
 */
export async function readTopic(brokers: string, topic: string, timeoutMs: number, isolation: 'read_committed' | 'read_uncommitted'): Promise<DlqMessage[]> {
  const admin = new KafkaAdmin({ brokers, clientId: 'sluice-dlq-tool' });
  let ends: Map<string, number>;
  try {
    const [described] = await admin.describeTopics([topic]);
    const partitions = Array.from({ length: described.partitions }, (_, partition) => ({ topic, partition }));
    ends = await admin.fetchEndOffsets(partitions, isolation === 'read_committed');
  } finally {
    await admin.close();
  }
  const pending = new Map([...ends].filter(([, end]) => end > 0).map(([k, end]) => [Number(k.slice(k.lastIndexOf(':') + 1)), end]));
  const out: DlqMessage[] = [];
  if (pending.size === 0) return out;

  const consumer = new BatchConsumer({
    brokers,
    clientId: 'sluice-dlq-tool',
    groupId: `sluice-dlq-tool-${randomBytes(6).toString('hex')}`,
    topics: [topic],
    autoOffsetReset: 'earliest',
    isolationLevel: isolation,
    maxBatchMessages: 5000,
    maxBatchWaitMs: 200,
  });
  await consumer.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    while (pending.size > 0) {
      if (Date.now() > deadline) throw new Error(`DLQ_READ_TIMEOUT: partitions ${[...pending.keys()].join(',')} not read to their end within ${timeoutMs} ms`);
      for (const m of await consumer.poll()) {
        if (m.offset < (ends.get(`${topic}:${m.partition}`) ?? 0)) {
          out.push({ partition: m.partition, offset: m.offset, key: m.key, value: m.value, headers: m.headers });
        }
      }
      // Positions pass transaction markers too, which data offsets alone would never reach.
      for (const lag of consumer.lag()) {
        const end = pending.get(lag.partition);
        if (end !== undefined && lag.nextOffset >= end) pending.delete(lag.partition);
      }
    }
  } finally {
    await consumer.close();
  }
  return out.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
