import { STALL_TO_POLL_INTERVAL_MS } from '@sluice/config';
import { CONTRACTS, DLQ_TOPIC, RAW_TOPIC, RegistryError, SchemaIdLearner, createRegistryClient, registryAuth, type ValidationLimits } from '@sluice/contracts';
import { isRetryable } from '@sluice/errors';
import { KafkaAdmin, TransactionalProcessor, kafkaConnectionFromConfig, type KafkaSecurityConfig, type ProducerRecord } from '@sluice/kafka';
import { StallWatch, type Logger, type SluiceMetrics } from '@sluice/telemetry';
import type { ValidateConfig } from './config';
import { validateError } from './errors';
import { ProgressWatch, type ProgressVerdict } from './liveness/progress-watch';
import { ChecksAhead } from './pipeline/checks-ahead';
import { processBatch, type BatchCheck, type BatchCounts } from './pipeline/process-batch';
import { traceRouted, type RouteTracer } from './pipeline/trace-route';
import { contractsForValidate } from './routing/contracts-adapter';
import { RecordingDecoder } from './routing/recording-decoder';
import { checkWith, type CheckResult, type RawMessage, type RoutedRecord, type ValidateContracts } from './routing/route';
import { WorkerChecks, type CheckOutcome } from './routing/worker-checks';

/** What `build` needs; main.ts passes the real ones. */
export interface ValidateDeps {
  config: Pick<
    ValidateConfig,
    | 'brokers'
    | 'groupId'
    | 'instanceId'
    | 'rawTopic'
    | 'dlqTopic'
    | 'validTopicPrefix'
    | 'maxEventBytes'
    | 'maxFutureSkewMs'
    | 'maxEventAgeMs'
    | 'maxBatchMessages'
    | 'maxBatchBytes'
    | 'maxBatchWaitMs'
    | 'transactionTimeoutMs'
    | 'stallTimeoutMs'
    | 'progressWindowMs'
    | 'sessionTimeoutMs'
    | 'checkThread'
    | 'schemaRegistryUrl'
    | 'schemaRegistryUsername'
    | 'schemaRegistryPassword'
    | keyof KafkaSecurityConfig
  >;
  logger: Logger;
  metrics?: SluiceMetrics;
  /** Spans for sampled records (`validate.route`); without it headers pass through untouched. */
  tracer?: RouteTracer;
  /** Default: the @sluice/contracts catalog (checked in a worker thread when `config.checkThread`); given, it runs on the main thread. */
  contracts?: ValidateContracts;
  clock?: () => number;
}

/** A built validate service. */
export interface ValidateService {
  readonly processor: TransactionalProcessor;
  /** Connects, then processes batches until `close()`; rejects when connecting fails or on a non-retryable error. */
  run(): Promise<void>;
  /** True once connected and not closing. */
  ready(): boolean;
  /**
   * False once connecting or one batch has run longer than the stall timeout (a hung client),
   * or a progress window found this instance stuck (see {@link ProgressWatch}).
   */
  live(): boolean;
  /** The step in progress and for how long, or undefined between steps (for the stall report). */
  running(): { step: string; forMs: number } | undefined;
  /** The last progress verdict (for the exit report). */
  progress(): ProgressVerdict;
  /** Finishes the current batch (its transaction commits or aborts), then closes the clients. Idempotent. */
  close(): Promise<void>;
  /** Running totals since start. */
  totals(): BatchCounts;
}

/**
 * Wires raw → (valid | DLQ) as Kafka consume-transform-produce: each polled batch becomes exactly
 * one output record per input record, produced in the same transaction that commits the batch's
 * offsets. A crash at any point leaves either the whole batch (outputs + offsets) or none of it.
 */
export function build(deps: ValidateDeps): ValidateService {
  const { config, logger, metrics } = deps;
  const clock = deps.clock ?? Date.now;
  const rawTopic = config.rawTopic || RAW_TOPIC.name;
  const dlqTopic = config.dlqTopic || DLQ_TOPIC.name;
  // With a registry, Confluent-framed events are readable once their schema ids are learned.
  // validate is the raw topic's authority: an event is dead-lettered as AVRO_WRITER_UNKNOWN only
  // after the registry denied its id, however many unknown ids its batch carries. The lookups run
  // inside the batch's transaction: past a quarter of its timeout the batch is retried (past half
  // when the lookups of its start, begun during the previous commit, used up a quarter first), and
  // the retry goes on from what was learned (thousands of new ids against a slow registry).
  // The decoder lists what it learns, so the check thread's decoder is taught the same ids.
  const decoder = config.schemaRegistryUrl ? new RecordingDecoder(Object.values(CONTRACTS)) : undefined;
  const learner = decoder
    ? new SchemaIdLearner(decoder, createRegistryClient({
          url: config.schemaRegistryUrl,
          fetch: globalThis.fetch,
          auth: registryAuth(config.schemaRegistryUsername, config.schemaRegistryPassword),
        }), {
        maxMisses: Infinity,
        budgetMs: Math.floor(config.transactionTimeoutMs / 4),
      })
    : undefined;
  // maxBytes too: without it the decoder's own 1 MiB held whatever VALIDATE_MAX_EVENT_BYTES said.
  const limits: Partial<ValidationLimits> = { maxBytes: config.maxEventBytes, maxFutureSkewMs: config.maxFutureSkewMs, maxAgeMs: config.maxEventAgeMs };
  const contracts = deps.contracts ?? contractsForValidate({ validTopicPrefix: config.validTopicPrefix, now: clock, avro: decoder, limits });
  /** Teaches the decoder the unknown schema ids of a batch (before its records are checked). */
  const learnSchemaIds = async (batch: readonly RawMessage[]): Promise<void> => {
    try {
      await learner?.prepare(batch.map((m) => m.value));
    } catch (err) {
      // Unreachable or refusing registry: retry the batch rather than dead-letter its events.
      if (err instanceof RegistryError) throw validateError('VALIDATE_REGISTRY_UNAVAILABLE', { registry: err.toJSON() }, err);
      throw err;
    }
  };
  // The checks run in a worker thread, those of a batch's start while the transaction before it
  // commits; on the main thread when a test gives its own contracts or the setting is off.
  const checks = deps.contracts === undefined && config.checkThread
    ? new WorkerChecks({ validTopicPrefix: config.validTopicPrefix, maxEventBytes: config.maxEventBytes, limits }, () => decoder?.learned ?? [])
    : undefined;
  // The registry lookups of the slices checked ahead, and of the batch, one after another: the
  // learner does not share a lookup in flight, and its time budget holds for one call at a time.
  let learning: Promise<unknown> = Promise.resolve();
  const checksAhead = checks
    ? new ChecksAhead(async (messages) => {
        const learned = learning.then(() => learnSchemaIds(messages));
        learning = learned.catch(() => undefined);
        await learned;
        return checks.check(messages, clock());
      })
    : undefined;
  const totals: BatchCounts = { valid: 0, dlq: 0, byReason: {} };
  let connected = false;
  let closing = false;
  const retryBackoffMs = { first: 100, max: 5000 };
  // A batch may legitimately wait out its transaction's timeout (undeliverable output), so a
  // limit below it would restart healthy instances during every broker outage.
  if (config.stallTimeoutMs <= config.transactionTimeoutMs) {
    throw new RangeError(`VALIDATE_STALL_TIMEOUT_MS (${config.stallTimeoutMs}) must exceed VALIDATE_TRANSACTION_TIMEOUT_MS (${config.transactionTimeoutMs})`);
  }
  const watch = new StallWatch(config.stallTimeoutMs);
  const kafka = kafkaConnectionFromConfig(config);
  const admin = new KafkaAdmin({ ...kafka, clientId: `sluice-validate-${config.instanceId}-progress` });
  const progress = new ProgressWatch({
    source: admin,
    groupId: config.groupId,
    topic: rawTopic,
    positions: () => processor.consumer.lag(),
    onSampleFailed: (err) => logger.warn({ code: (err as { code?: string }).code, message: (err as Error).message }, 'progress check could not read the group; its window starts again'),
  });
  let progressTimer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;

  const checkProgressEvery = (ms: number): void => {
    progressTimer = setTimeout(() => {
      void progress.check().then((verdict) => {
        if (verdict.stuck) logger.error({ progress: verdict }, 'validate made no progress through raw for a whole window');
        else if (!closing) checkProgressEvery(ms);
      });
    }, ms);
    progressTimer.unref();
  };

  /** The batch the current transaction routed, counted when it commits. */
  let routed: { input: number; counts: BatchCounts; outByContract: { valid: Map<string, number>; dlq: Map<string, number> }; deadLetters: RoutedRecord[] } | undefined;
  const transform = async (batch: readonly RawMessage[]): Promise<ProducerRecord[]> => {
    let check: BatchCheck;
    if (checksAhead) {
      const outcomes = await checksAhead.outcomes(batch);
      check = (_msg, i) => resultOf(outcomes[i]);
    } else {
      await learnSchemaIds(batch);
      check = checkWith(contracts);
    }
    const { records, counts } = processBatch(batch, check, { dlqTopic, maxEventBytes: config.maxEventBytes }, clock());
    // After routing, so a span's outcome is the record's; an aborted transaction routes (and
    // traces) the batch again, which shows as a second attempt in the trace, not a lost one.
    const traced = deps.tracer ? traceRouted(deps.tracer, batch, records) : 0;
    logger.debug({ input: batch.length, valid: counts.valid, dlq: counts.dlq, traced }, 'batch routed');
    // Counted once the transaction commits (count()): each aborted attempt counted the whole
    // batch again, and DLQ-rate alerts fired for records never written.
    routed = { input: batch.length, counts, outByContract: perContract(records), deadLetters: records.filter((r) => r.outcome === 'dlq') };
    return records.map((r) => ({ topic: r.topic, key: r.key, value: r.value, headers: r.headers }));
  };
  const count = (batch: NonNullable<typeof routed>): void => {
    const { counts } = batch;
    totals.valid += counts.valid;
    totals.dlq += counts.dlq;
    for (const [reason, n] of Object.entries(counts.byReason)) totals.byReason[reason] = (totals.byReason[reason] ?? 0) + n;
    if (!metrics) return;
    metrics.eventsIn.add(batch.input, { outcome: 'consumed' });
    // By contract (a closed set: routing names only contracts it knows), so a DLQ share can be
    // judged per contract: one contract failing whole was a sliver of the total.
    for (const outcome of ['valid', 'dlq'] as const) {
      for (const [contract, n] of batch.outByContract[outcome]) metrics.eventsOut.add(n, { outcome, contract });
    }
    for (const r of batch.deadLetters) metrics.dlqRecords.add(1, { reason: r.reason ?? 'unknown', contract: r.contract ?? 'unknown' });
  };

  const processor = new TransactionalProcessor({
    consumer: {
      ...kafka,
      clientId: `sluice-validate-${config.instanceId}`,
      groupId: config.groupId,
      topics: [rawTopic],
      maxBatchMessages: config.maxBatchMessages,
      maxBatchBytes: config.maxBatchBytes,
      maxBatchWaitMs: config.maxBatchWaitMs,
      sessionTimeoutMs: config.sessionTimeoutMs,
      // Polls are at most one batch (bounded by the stall limit) plus a retry back-off apart. This
      // is also the rebalance timeout: how long a join can wait for a member that died with the
      // broker (seen after a broker restart), so it follows the stall limit, not the 300 s default.
      maxPollIntervalMs: config.stallTimeoutMs + STALL_TO_POLL_INTERVAL_MS,
      // No static membership (group.instance.id): after a broker restart a static member can be
      // fenced by its own rejoin and die (seen in the chaos broker scenario) or hang without
      // partitions (confluentinc/librdkafka#3437). A dead instance's partitions move after the
      // session timeout instead.
      onAssign: (partitions) => {
        progress.assigned(partitions);
        logger.info({ partitions }, 'partitions assigned');
      },
      onRevoke: (partitions) => {
        progress.revoked(partitions);
        logger.info({ partitions }, 'partitions revoked');
      },
    },
    producer: {
      ...kafka,
      clientId: `sluice-validate-${config.instanceId}`,
      // Stable per instance: a restart fences the predecessor's open transaction at once
      // instead of leaving read_committed readers blocked until the transaction times out.
      transactionalId: `${config.groupId}-${config.instanceId}`,
      transactionTimeoutMs: config.transactionTimeoutMs,
      lingerMs: 5,
    },
    transform,
    // Each phase is a bounded client call (transactional ones fail KAFKA_FATAL past their
    // timeout), so the stall clock restarts per phase: only a call that never returns trips it.
    onStep: (step) => watch.progress(`batch: ${step}`),
    // Received, whether or not its transaction then commits (a failing begin or commit is the
    // batch loop's to retry and report, not a silent consumer).
    onPolled: (batch) => progress.batchStarted(batch),
    ...(checksAhead ? { onFetchedAhead: (messages: readonly RawMessage[]) => checksAhead.prepare(messages) } : {}),
  });

  // processor.run() would retry silently; this loop does the same but says so, once per failed
  // batch (a missing valid topic or a broker outage must be visible, not a quiet stall).
  const processUntilClosed = async (): Promise<void> => {
    let backoff = retryBackoffMs.first;
    while (!closing) {
      watch.begin('batch');
      routed = undefined;
      try {
        await processor.processOnce();
        if (routed) count(routed);
        watch.end();
        progress.batchEnded();
        backoff = retryBackoffMs.first;
      } catch (err) {
        watch.end();
        progress.batchEnded();
        if (closing) return;
        if (!isRetryable(err)) throw err;
        // details name the cause where there is one (the registry's own code: unreachable, or refusing the credentials).
        logger.warn({ code: (err as { code?: string }).code, message: (err as Error).message, details: (err as { details?: unknown }).details, retryInMs: backoff }, 'batch aborted; retrying');
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, retryBackoffMs.max);
      }
    }
  };

  return {
    processor,
    async run() {
      watch.begin('connect');
      try {
        await processor.connect();
      } finally {
        watch.end();
      }
      connected = true;
      checkProgressEvery(config.progressWindowMs);
      logger.info({ rawTopic, dlqTopic, groupId: config.groupId, instanceId: config.instanceId, checkThread: checks !== undefined }, 'validate running');
      loop = processUntilClosed();
      await loop;
    },
    ready: () => connected && !closing,
    live: () => watch.live() && progress.live(),
    running: () => watch.running(),
    progress: () => progress.current(),
    async close() {
      closing = true;
      clearTimeout(progressTimer);
      // Let the batch in hand commit (or abort) before the clients go away.
      await loop?.catch(() => undefined);
      await processor.close();
      await admin.close();
      await checks?.close();
    },
    totals: () => totals,
  };
}

/** The check result a worker's outcome stands for (a check that threw throws again here, so routing dead-letters it alike). */
function resultOf(outcome: CheckOutcome): CheckResult {
  if (outcome === null) throw new Error('the record was not checked');
  if ('threw' in outcome) throw new Error(outcome.threw);
  return outcome;
}

/** Routed records per outcome and contract ('unknown' where routing named none). */
function perContract(records: readonly RoutedRecord[]): { valid: Map<string, number>; dlq: Map<string, number> } {
  const out = { valid: new Map<string, number>(), dlq: new Map<string, number>() };
  for (const r of records) {
    const counts = out[r.outcome];
    const contract = r.contract ?? 'unknown';
    counts.set(contract, (counts.get(contract) ?? 0) + 1);
  }
  return out;
}
