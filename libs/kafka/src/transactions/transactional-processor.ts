import { isRetryable, isSluiceError } from '@sluice/errors';
import { KAFKA_CHANNELS, publish } from '../channels';
import { kafkaError } from '../errors';
import { BatchConsumer, nextOffsets, partitionKey } from '../consumer/consumer';
import type { ConsumedMessage, TopicPartitionOffset } from '../consumer/types';
import type { ProcessResult, TransactionalProcessorOptions } from './options';
import { TransactionalProducer } from './transactional-producer';

const MAX_BACKOFF_MS = 5_000;

/**
 * Consume-transform-produce, exactly once: each batch's output records and its consumer offsets
 * are committed in ONE Kafka transaction. On any failure the transaction is aborted and the
 * consumer rewound to the batch's first offsets, so the batch is processed again (or, after a
 * non-retryable error, by whichever instance takes the partitions over).
 */
export class TransactionalProcessor {
  /** The consumer (read_committed, manual offsets). */
  readonly consumer: BatchConsumer;
  /** The transactional producer. */
  readonly producer: TransactionalProducer;
  private readonly options: TransactionalProcessorOptions;
  private stopRequested = false;

  constructor(options: TransactionalProcessorOptions) {
    this.options = options;
    this.consumer = new BatchConsumer({ ...options.consumer, isolationLevel: 'read_committed' });
    this.producer = new TransactionalProducer(options.producer);
  }

  /** Connects the producer (fencing older instances with the same transactional.id) and the consumer. */
  async connect(): Promise<void> {
    await this.producer.connect();
    await this.consumer.connect();
  }

  /**
   * Polls one batch and, if non-empty, transforms it and commits output + offsets in one
   * transaction. On failure: aborts, rewinds, rethrows (a KafkaError, or the transform's error).
   */
  async processOnce(): Promise<ProcessResult> {
    this.step('poll');
    const batch = await this.consumer.poll();
    if (batch.length === 0) return { input: 0, output: 0 };
    const started = performance.now();
    let output = 0;
    let offsetsSent: Promise<void> | undefined;
    let producing = false;
    try {
      // Inside the try: a hook that throws rewinds the batch like any failure. Outside it, the
      // consumer had moved past the batch and the next transaction committed offsets beyond it.
      this.options.onPolled?.(batch);
      this.step('begin');
      await this.producer.begin();
      // The offsets travel to the broker (two round trips) while the batch is transformed and
      // produced: a transaction takes its offsets and records in any order until it commits.
      offsetsSent = this.producer.sendOffsets(this.consumer, nextOffsets(batch));
      offsetsSent.catch(() => undefined); // awaited below, or settled before the abort
      this.step('transform');
      const records = await this.options.transform(batch);
      output = records.length;
      this.step('send');
      producing = true;
      if (records.length > 0) await this.producer.produce(records);
      producing = false;
      this.step('offsets');
      await offsetsSent;
      this.step('commit');
      await this.commitFetchingAhead();
    } catch (caught) {
      // An abort while the offsets are still on their way would be refused as a conflicting call.
      this.step('offsets');
      const offsetsFailure = await offsetsSent?.then(
        () => undefined,
        (e: unknown) => e,
      );
      // Offsets the broker refused make the transaction abortable, and the produce that follows
      // fails only with "must abort": the refusal is the cause to report.
      const err = producing && offsetsFailure !== undefined ? offsetsFailure : caught;
      await this.abortAndRewind(batch, err, started, output);
      throw err;
    }
    publish(KAFKA_CHANNELS.transactionCommitted, {
      transactionalId: this.producer.transactionalId,
      inputCount: batch.length,
      outputCount: output,
      latencyMs: performance.now() - started,
    });
    return { input: batch.length, output };
  }

  /**
   * Runs `processOnce` until `stop()`/`close()`. Retryable failures are retried with backoff;
   * the first non-retryable one (fenced producer, fatal error, a throwing transform) is thrown.
   */
  async run(): Promise<void> {
    this.stopRequested = false;
    let backoff = this.options.retryBackoffMs ?? 100;
    while (!this.stopRequested) {
      try {
        await this.processOnce();
        backoff = this.options.retryBackoffMs ?? 100;
      } catch (err) {
        if (!isRetryable(err) || this.stopRequested) throw err;
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** Makes `run()` return after the current batch. */
  stop(): void {
    this.stopRequested = true;
    this.consumer.stop();
  }

  /** Stops, then closes consumer and producer. An open transaction was already aborted or committed. */
  async close(): Promise<void> {
    this.stop();
    await this.consumer.close();
    await this.producer.close();
  }

  /**
   * Commits the transaction while the consumer takes the next batch's messages from librdkafka
   * (a broker round trip the main thread would otherwise idle through). The fetch ends before
   * this returns, so an abort's rewind never races it. A failed fetch is left to the next poll.
   */
  private async commitFetchingAhead(): Promise<void> {
    const committing = this.producer.commit();
    const hook = this.options.onFetchedAhead;
    const ahead = this.consumer
      .fetchAhead(
        hook &&
          ((messages) => {
            try {
              hook(messages);
            } catch {
              // The hook only gets a head start on work its batch does anyway.
            }
          }),
      )
      .catch(() => undefined);
    try {
      await committing;
    } finally {
      await ahead;
    }
  }

  private step(name: string): void {
    this.options.onStep?.(name);
  }

  private async abortAndRewind(batch: readonly ConsumedMessage[], cause: unknown, started: number, output: number): Promise<void> {
    this.step('abort');
    try {
      await this.producer.abort();
    } catch (abortErr) {
      // A fenced or fatal producer cannot abort; the broker aborts its transaction on timeout
      // or when the new owner of the transactional.id initialises.
      if (!isSluiceError(abortErr)) throw abortErr;
    }
    publish(KAFKA_CHANNELS.transactionAborted, {
      transactionalId: this.producer.transactionalId,
      inputCount: batch.length,
      outputCount: output,
      latencyMs: performance.now() - started,
      code: isSluiceError(cause) ? cause.code : 'TRANSFORM_FAILED',
    });
    this.step('rewind');
    for (const position of firstOffsets(batch)) {
      try {
        await this.consumer.seek(position);
      } catch (seekErr) {
        // Going on without the rewind would let the next transaction commit offsets past a
        // batch that was never produced: stop instead; a restart resumes from committed offsets.
        throw kafkaError('KAFKA_FATAL', `transaction: could not rewind ${position.topic}[${position.partition}] to ${position.offset} after abort`, {
          cause: seekErr,
          details: { operation: 'transaction.rewind', topic: position.topic, partition: position.partition },
        });
      }
    }
  }
}

/** Per partition, the lowest offset in the batch: where to resume to see the batch again. */
function firstOffsets(batch: readonly ConsumedMessage[]): TopicPartitionOffset[] {
  const first = new Map<string, TopicPartitionOffset>();
  for (const m of batch) {
    const k = partitionKey(m);
    const current = first.get(k);
    if (current === undefined || m.offset < current.offset) first.set(k, { topic: m.topic, partition: m.partition, offset: m.offset });
  }
  return [...first.values()];
}
