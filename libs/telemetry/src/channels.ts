import diagnostics from 'node:diagnostics_channel';
import type { SluiceMetrics } from './metrics';
import type { TracingRuntime } from './tracing';

/**
 * Channel names telemetry subscribes to. libs/kafka (`KAFKA_CHANNELS`) and libs/lake
 * (`LAKE_CHANNELS`) publish on them; telemetry may not import those adapters, so the names
 * are repeated here and tools/src/deploy/channels.test.ts keeps both lists in step. The
 * payload shapes below mirror the adapters' event types; docs/design/telemetry.md lists them.
 */
export const CHANNELS = {
  kafkaLag: 'sluice:kafka:lag',
  kafkaPaused: 'sluice:kafka:paused',
  kafkaResumed: 'sluice:kafka:resumed',
  kafkaRevoked: 'sluice:kafka:revoked',
  kafkaProduceAcked: 'sluice:kafka:produce-acked',
  kafkaProduceFailed: 'sluice:kafka:produce-failed',
  kafkaTransactionCommitted: 'sluice:kafka:transaction-committed',
  kafkaTransactionAborted: 'sluice:kafka:transaction-aborted',
  kafkaClientError: 'sluice:kafka:client-error',
  lakeCommit: 'sluice:lake:commit',
  lakeConflict: 'sluice:lake:conflict',
  lakeMerge: 'sluice:lake:merge',
  lakeCompaction: 'sluice:lake:compaction',
  lakeVacuum: 'sluice:lake:vacuum',
  lakeCheckpointFailed: 'sluice:lake:checkpoint-failed',
  /** Proposed, not yet published by libs/lake: live file counts of a snapshot. */
  lakeTableStats: 'sluice:lake:table-stats',
  kafkaProducerQueue: 'sluice:kafka:producer-queue',
} as const;

/** A partition of a topic, as in libs/kafka. */
export interface PartitionRef {
  topic: string;
  partition: number;
}
/** `sluice:kafka:lag`: `highWatermark - nextOffset` of one partition, ≥ 0. */
export interface LagEvent {
  groupId: string;
  topic: string;
  partition: number;
  lag: number;
}
/** `sluice:kafka:paused` | `resumed` | `revoked`: the partitions concerned. */
export interface PartitionsEvent {
  clientId: string;
  groupId: string;
  partitions: PartitionRef[];
}
/** `sluice:kafka:produce-acked`: a send whose every message was acknowledged. */
export interface ProduceAckedEvent {
  clientId: string;
  count: number;
  bytes: number;
  latencyMs: number;
}
/** `sluice:kafka:produce-failed`: a send with `failed` unacknowledged messages. */
export interface ProduceFailedEvent {
  clientId: string;
  count: number;
  failed: number;
  code: string;
}
/** `sluice:kafka:transaction-committed` | `transaction-aborted`. */
export interface TransactionEvent {
  transactionalId: string;
  inputCount: number;
  outputCount: number;
  latencyMs: number;
  code?: string;
}
/** `sluice:kafka:client-error`: an asynchronous client error. */
export interface ClientErrorEvent {
  clientId: string;
  code: string;
  retryable: boolean;
  message: string;
}
/** `sluice:lake:commit`: a commit landed (published in the committing caller's async context). */
export interface LakeCommitEvent {
  table: string;
  version: number;
  operation: string;
  attempts: number;
  durationMs: number;
}
/** `sluice:lake:conflict`: a commit attempt lost the race; outcome `retry` or the conflict kind. */
export interface LakeConflictEvent {
  table: string;
  version: number;
  operation: string;
  outcome: string;
}
/** `sluice:lake:merge`: a MERGE finished. */
export interface LakeMergeEvent {
  table: string;
  version: number;
  filesRead: number;
  bytesRead: number;
  filesRewritten: number;
  bytesRewritten: number;
  durationMs: number;
}
/** `sluice:lake:compaction`: a compaction finished. */
export interface LakeCompactionEvent {
  table: string;
  version: number | undefined;
  filesRemoved: number;
  filesAdded: number;
  durationMs: number;
}
/** `sluice:lake:vacuum`: a vacuum finished. */
export interface LakeVacuumEvent {
  table: string;
  filesDeleted: number;
  durationMs: number;
}
/** `sluice:lake:checkpoint-failed`: a checkpoint due after a commit failed (the commit stands), or one could not be read and a load replayed past it. */
export interface LakeCheckpointFailedEvent {
  table: string;
  version: number;
  code: string;
  message: string;
}
/** `sluice:lake:table-stats`: counts of the latest snapshot after a commit or load. */
export interface TableStatsEvent {
  table: string;
  /** When the snapshot's version was committed, ms since epoch (absent from older publishers). */
  committedAtMs?: number;
  files: number;
  /** Files below the compaction target size. */
  smallFiles: number;
  /** Small files a compaction pass would pick up now (the backlog). */
  compactionBacklog: number;
}
/** `sluice:kafka:producer-queue`: unacknowledged messages of one (non-transactional) producer. */
export interface ProducerQueueEvent {
  clientId: string;
  depth: number;
}

type Handler = (message: Record<string, unknown>) => void;

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
  // Latest commit time per table, s: from this process's commits and from loaded snapshots (any
  // writer's, so the gauge exists after a restart that has not committed yet); never goes back.
  const lastCommitAt = new Map<string, number>();
  const committed = (table: string, atSeconds: number) => {
    if (atSeconds <= (lastCommitAt.get(table) ?? -Infinity)) return;
    lastCommitAt.set(table, atSeconds);
    metrics.lastCommit.set(atSeconds, { table });
  };
  // Paused partitions per topic, across this process's consumers: key clientId \0 partition.
  const paused = new Map<string, Set<string>>();
  const setPaused = (e: PartitionsEvent, on: boolean) => {
    const touched = new Set<string>();
    for (const p of e.partitions) {
      const key = `${e.clientId}\u0000${p.partition}`;
      const set = paused.get(p.topic) ?? new Set<string>();
      if (on) set.add(key);
      else set.delete(key);
      paused.set(p.topic, set);
      touched.add(p.topic);
    }
    for (const topic of touched) metrics.pausedPartitions.set(paused.get(topic)?.size ?? 0, { topic });
  };
  const partitionsEvent = (m: Record<string, unknown>): PartitionsEvent => {
    const e = m as unknown as PartitionsEvent;
    need(str(e.clientId) && Array.isArray(e.partitions) && e.partitions.length <= 100_000);
    for (const p of e.partitions) need(p !== null && typeof p === 'object' && str(p.topic) && nonNegInt(p.partition));
    return e;
  };

  const handlers: Record<string, Handler> = {
    [CHANNELS.kafkaLag]: (m) => {
      const e = m as unknown as LagEvent;
      need(str(e.topic) && nonNegInt(e.partition) && nonNeg(e.lag));
      metrics.consumerLag.set(e.lag, { topic: e.topic, partition: e.partition });
    },
    [CHANNELS.kafkaPaused]: (m) => setPaused(partitionsEvent(m), true),
    [CHANNELS.kafkaResumed]: (m) => setPaused(partitionsEvent(m), false),
    [CHANNELS.kafkaRevoked]: (m) => {
      const e = partitionsEvent(m);
      setPaused(e, false);
      // OpenTelemetry cannot delete a series; zero the lag of partitions this process no longer
      // owns so a stale value cannot keep a lag alert firing (the new owner reports the truth).
      for (const p of e.partitions) metrics.consumerLag.set(0, { topic: p.topic, partition: p.partition });
    },
    [CHANNELS.kafkaProduceAcked]: (m) => {
      const e = m as unknown as ProduceAckedEvent;
      need(nonNegInt(e.count) && nonNeg(e.latencyMs));
      metrics.produceDuration.record(e.latencyMs / 1000);
    },
    [CHANNELS.kafkaProduceFailed]: (m) => {
      const e = m as unknown as ProduceFailedEvent;
      need(nonNegInt(e.failed) && str(e.code));
      metrics.produceFailedMessages.add(e.failed, { code: e.code });
    },
    [CHANNELS.kafkaTransactionCommitted]: (m) => transaction(m, 'committed'),
    [CHANNELS.kafkaTransactionAborted]: (m) => transaction(m, 'aborted'),
    [CHANNELS.kafkaClientError]: (m) => {
      const e = m as unknown as ClientErrorEvent;
      need(str(e.code) && typeof e.retryable === 'boolean');
      metrics.kafkaClientErrors.add(1, { code: e.code, retryable: String(e.retryable) });
    },
    [CHANNELS.lakeCommit]: (m) => {
      const e = m as unknown as LakeCommitEvent;
      need(str(e.table) && nonNegInt(e.version) && str(e.operation) && nonNeg(e.durationMs));
      metrics.commitDuration.record(e.durationMs / 1000, { table: e.table, operation: e.operation });
      metrics.commits.add(1, { table: e.table, outcome: 'ok' });
      metrics.tableVersion.set(e.version, { table: e.table });
      committed(e.table, Date.now() / 1000);
      tracing.recordSpan('lake.commit', e.durationMs, {
        kind: 'client',
        attributes: { 'sluice.table': e.table, 'sluice.table.version': e.version, 'sluice.operation': e.operation, 'sluice.attempts': Number(e.attempts) || 1 },
      });
    },
    [CHANNELS.lakeConflict]: (m) => {
      const e = m as unknown as LakeConflictEvent;
      need(str(e.table) && str(e.outcome));
      metrics.commits.add(1, { table: e.table, outcome: e.outcome === 'retry' ? 'retry' : 'conflict' });
    },
    [CHANNELS.lakeMerge]: (m) => {
      const e = m as unknown as LakeMergeEvent;
      need(str(e.table) && nonNeg(e.durationMs) && nonNeg(e.bytesRewritten));
      metrics.mergeDuration.record(e.durationMs / 1000, { table: e.table });
      metrics.mergeRewrittenBytes.add(e.bytesRewritten, { table: e.table });
      tracing.recordSpan('lake.merge', e.durationMs, {
        kind: 'internal',
        attributes: { 'sluice.table': e.table, 'sluice.files_rewritten': Number(e.filesRewritten) || 0 },
      });
    },
    [CHANNELS.lakeCompaction]: (m) => {
      const e = m as unknown as LakeCompactionEvent;
      need(str(e.table) && nonNegInt(e.filesRemoved) && nonNeg(e.durationMs));
      metrics.compactedFiles.add(e.filesRemoved, { table: e.table });
      tracing.recordSpan('lake.compaction', e.durationMs, { kind: 'internal', attributes: { 'sluice.table': e.table } });
    },
    [CHANNELS.lakeVacuum]: (m) => {
      const e = m as unknown as LakeVacuumEvent;
      need(str(e.table) && nonNegInt(e.filesDeleted));
      metrics.vacuumedFiles.add(e.filesDeleted, { table: e.table });
    },
    [CHANNELS.lakeCheckpointFailed]: (m) => {
      const e = m as unknown as LakeCheckpointFailedEvent;
      need(str(e.table) && str(e.code));
      metrics.checkpointFailures.add(1, { table: e.table, code: e.code });
    },
    [CHANNELS.lakeTableStats]: (m) => {
      const e = m as unknown as TableStatsEvent;
      need(str(e.table) && nonNegInt(e.files) && nonNegInt(e.smallFiles) && nonNegInt(e.compactionBacklog));
      need(e.committedAtMs === undefined || nonNeg(e.committedAtMs));
      if (e.committedAtMs !== undefined) committed(e.table, e.committedAtMs / 1000);
      metrics.tableFiles.set(e.files, { table: e.table });
      metrics.tableSmallFiles.set(e.smallFiles, { table: e.table });
      metrics.compactionBacklog.set(e.compactionBacklog, { table: e.table });
    },
    [CHANNELS.kafkaProducerQueue]: (m) => {
      const e = m as unknown as ProducerQueueEvent;
      need(nonNeg(e.depth));
      metrics.producerQueue.set(e.depth);
    },
  };

  function transaction(m: Record<string, unknown>, outcome: 'committed' | 'aborted'): void {
    const e = m as unknown as TransactionEvent;
    need(nonNeg(e.latencyMs));
    metrics.transactionDuration.record(e.latencyMs / 1000, { outcome });
    tracing.recordSpan('kafka.transaction', e.latencyMs, {
      kind: 'client',
      attributes: { 'sluice.input_count': Number(e.inputCount) || 0, 'sluice.output_count': Number(e.outputCount) || 0 },
      error: outcome === 'aborted' ? (typeof e.code === 'string' ? e.code : 'aborted') : undefined,
    });
  }

  const reported = new Set<string>();
  const subscriptions: Array<[string, (message: unknown, name: string | symbol) => void]> = [];
  for (const [name, handle] of Object.entries(handlers)) {
    const listener = (message: unknown) => {
      try {
        need(message !== null && typeof message === 'object');
        handle(message as Record<string, unknown>);
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
