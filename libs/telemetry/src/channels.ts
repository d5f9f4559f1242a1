import diagnostics from 'node:diagnostics_channel';
import type { SluiceMetrics } from './metrics';
import type { TracingRuntime } from './tracing';

/**
 * Channel names telemetry subscribes to. Adapters publish on these with
 * `diagnostics_channel.channel(name).publish(payload)`; the payload shapes are below and in
 * docs/design/telemetry.md. Telemetry cannot import the adapters, so the names are repeated
 * here as strings and a test pins them.
 */
export const CHANNELS = {
  kafkaConsumerLag: 'sluice:kafka:consumer-lag',
  kafkaPausedPartitions: 'sluice:kafka:paused-partitions',
  kafkaProducerQueue: 'sluice:kafka:producer-queue',
  kafkaProduceError: 'sluice:kafka:produce-error',
  kafkaTransactionCommit: 'sluice:kafka:transaction-commit',
  lakeCommit: 'sluice:lake:commit',
  lakeTableStats: 'sluice:lake:table-stats',
  lakeCompactionBacklog: 'sluice:lake:compaction-backlog',
} as const;

/** `sluice:kafka:consumer-lag` — one per assigned partition, whenever lag is measured. */
export interface ConsumerLagEvent {
  topic: string;
  partition: number;
  /** High watermark − committed offset, ≥ 0. */
  lag: number;
}
/** `sluice:kafka:paused-partitions` — after every pause/resume, the current count per topic. */
export interface PausedPartitionsEvent {
  topic: string;
  count: number;
}
/** `sluice:kafka:producer-queue` — current number of unacknowledged messages. */
export interface ProducerQueueEvent {
  depth: number;
}
/** `sluice:kafka:produce-error` — one per failed produce request. */
export interface ProduceErrorEvent {
  topic: string;
  /** The adapter's `KAFKA_*` error code. */
  code: string;
}
/** `sluice:kafka:transaction-commit` — after each transaction commit attempt. */
export interface TransactionCommitEvent {
  durationMs: number;
  outcome: 'ok' | 'error';
  error?: string;
}
/** `sluice:lake:commit` — after each table commit attempt (published in the caller's async context). */
export interface LakeCommitEvent {
  table: string;
  /** bronze | silver | gold | compaction; the lake may leave it to the app (then "unknown"). */
  tier?: string;
  /** The committed version; present when outcome is ok. */
  version?: number;
  durationMs: number;
  outcome: 'ok' | 'conflict' | 'error';
  error?: string;
}
/** `sluice:lake:table-stats` — after a commit or snapshot load, counts of the live snapshot. */
export interface TableStatsEvent {
  table: string;
  files: number;
  /** Files below the compaction target size. */
  smallFiles: number;
}
/** `sluice:lake:compaction-backlog` — after each compaction planning pass. */
export interface CompactionBacklogEvent {
  table: string;
  /** Small files not yet compacted. */
  files: number;
}

type Handler = (message: unknown) => void;

/**
 * Subscribes to every channel in {@link CHANNELS} and returns the unsubscribe function.
 * A malformed payload is dropped and reported once per channel through `onMalformed`:
 * diagnostics_channel rethrows subscriber errors as uncaught exceptions, so a handler here
 * must never throw into the publishing adapter.
 */
export function subscribeChannels(
  metrics: SluiceMetrics,
  tracing: TracingRuntime,
  onMalformed: (channel: string, payload: unknown) => void,
): () => void {
  const handlers: Record<string, Handler> = {
    [CHANNELS.kafkaConsumerLag]: (m) => {
      const e = m as ConsumerLagEvent;
      need(str(e.topic) && nonNegInt(e.partition) && nonNeg(e.lag));
      metrics.consumerLag.set(e.lag, { topic: e.topic, partition: e.partition });
    },
    [CHANNELS.kafkaPausedPartitions]: (m) => {
      const e = m as PausedPartitionsEvent;
      need(str(e.topic) && nonNegInt(e.count));
      metrics.pausedPartitions.set(e.count, { topic: e.topic });
    },
    [CHANNELS.kafkaProducerQueue]: (m) => {
      const e = m as ProducerQueueEvent;
      need(nonNeg(e.depth));
      metrics.producerQueue.set(e.depth);
    },
    [CHANNELS.kafkaProduceError]: (m) => {
      const e = m as ProduceErrorEvent;
      need(str(e.topic) && str(e.code));
      metrics.produceErrors.add(1, { topic: e.topic, code: e.code });
    },
    [CHANNELS.kafkaTransactionCommit]: (m) => {
      const e = m as TransactionCommitEvent;
      need(nonNeg(e.durationMs) && (e.outcome === 'ok' || e.outcome === 'error'));
      metrics.commitDuration.record(e.durationMs / 1000, { tier: 'kafka', outcome: e.outcome });
      metrics.commits.add(1, { tier: 'kafka', outcome: e.outcome });
      tracing.recordSpan('kafka.transaction.commit', e.durationMs, { kind: 'client', error: e.outcome === 'ok' ? undefined : (e.error ?? e.outcome) });
    },
    [CHANNELS.lakeCommit]: (m) => {
      const e = m as LakeCommitEvent;
      need(str(e.table) && nonNeg(e.durationMs) && ['ok', 'conflict', 'error'].includes(e.outcome));
      need(e.tier === undefined || str(e.tier));
      need(e.version === undefined || nonNegInt(e.version));
      const tier = e.tier ?? 'unknown';
      metrics.commitDuration.record(e.durationMs / 1000, { tier, outcome: e.outcome });
      metrics.commits.add(1, { tier, outcome: e.outcome });
      if (e.outcome === 'ok') {
        metrics.lastCommit.set(Date.now() / 1000, { table: e.table, tier });
        if (e.version !== undefined) metrics.tableVersion.set(e.version, { table: e.table });
      }
      tracing.recordSpan('lake.commit', e.durationMs, {
        kind: 'client',
        attributes: { 'sluice.table': e.table, 'sluice.tier': tier, ...(e.version !== undefined ? { 'sluice.table.version': e.version } : {}) },
        error: e.outcome === 'ok' ? undefined : (e.error ?? e.outcome),
      });
    },
    [CHANNELS.lakeTableStats]: (m) => {
      const e = m as TableStatsEvent;
      need(str(e.table) && nonNegInt(e.files) && nonNegInt(e.smallFiles));
      metrics.tableFiles.set(e.files, { table: e.table });
      metrics.tableSmallFiles.set(e.smallFiles, { table: e.table });
    },
    [CHANNELS.lakeCompactionBacklog]: (m) => {
      const e = m as CompactionBacklogEvent;
      need(str(e.table) && nonNegInt(e.files));
      metrics.compactionBacklog.set(e.files, { table: e.table });
    },
  };

  const reported = new Set<string>();
  const subscriptions: Array<[string, (message: unknown, name: string | symbol) => void]> = [];
  for (const [name, handle] of Object.entries(handlers)) {
    const listener = (message: unknown) => {
      try {
        if (message === null || typeof message !== 'object') throw new Malformed();
        handle(message);
      } catch {
        if (!reported.has(name)) {
          reported.add(name);
          onMalformed(name, message);
        }
      }
    };
    diagnostics.subscribe(name, listener);
    subscriptions.push([name, listener]);
  }
  return () => {
    for (const [name, listener] of subscriptions) diagnostics.unsubscribe(name, listener);
  };
}

class Malformed extends Error {}

function need(ok: boolean): void {
  if (!ok) throw new Malformed();
}
function str(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= 256;
}
function nonNeg(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}
function nonNegInt(v: unknown): v is number {
  return nonNeg(v) && Number.isInteger(v);
}
