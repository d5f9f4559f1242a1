import type { BatchConsumer } from '../consumer/consumer';
import type { TopicPartitionOffset } from '../consumer/types';
import { KAFKA_CHANNELS, publish, type OffsetsCommittedEvent } from '../channels';
import { callback } from '../connection';
import { kafkaError, translateKafkaError, type KafkaError } from '../errors';
import { PRODUCER_DEFAULTS } from '../producer/options';
import { ProducerClient } from '../producer/producer';
import type { ProducerRecord } from '../producer/types';
import type { TransactionalProducerOptions } from './options';

/**
 * An idempotent producer bound to one `transactional.id`. Messages produced between `begin()` and
 * `commit()` become visible to read_committed consumers atomically with the consumer offsets
 * given to `sendOffsets()`, or not at all.
 *
 * It takes delivery reports of failed messages only: `commit()` flushes the transaction's
 * messages and fails when any of them did not reach the broker, which is the only
 * acknowledgement that counts here, and the first failure's report says why. Without a report
 * per message each one costs about half the CPU (no native-to-JS call, no promise).
 */
export class TransactionalProducer extends ProducerClient {
  /** The transactional.id of this instance. */
  readonly transactionalId: string;
  private readonly hungGraceMs: number;
  /** Set once a call outlived its timeout: the native client is stuck and every later call fails with it. */
  private hung: KafkaError | undefined;
  /** The first message of the open transaction that failed delivery, from its report. */
  private deliveryFailure: KafkaError | undefined;
  /** Between a begin() and the commit() or abort() that ends it. */
  private open = false;
  /** Offsets added to the open transaction: published as committed when it commits. */
  private sentOffsets: OffsetsCommittedEvent[] = [];

  constructor(options: TransactionalProducerOptions) {
    const transactionTimeoutMs = options.transactionTimeoutMs ?? 60_000;
    // A message cannot outlive its transaction: librdkafka refuses to start when the delivery
    // timeout is the longer one, so it follows a shorter transaction timeout.
    const deliveryTimeoutMs = Math.min(options.deliveryTimeoutMs ?? PRODUCER_DEFAULTS.deliveryTimeoutMs, transactionTimeoutMs);
    super({ ...options, deliveryTimeoutMs }, 'errors', {
      'transactional.id': options.transactionalId,
      'transaction.timeout.ms': transactionTimeoutMs,
    });
    this.transactionalId = options.transactionalId;
    this.hungGraceMs = options.hungGraceMs ?? 15_000;
    this.native.on('delivery-report', (err, report) => {
      if (!err) return;
      const failure = translateKafkaError(err, { operation: 'produce', topic: report.topic, transactionalId: this.transactionalId });
      // Purged messages are what an abort leaves behind (their reports can arrive after the next
      // begin()), never the cause of a failure.
      if (!String(failure.details?.librdkafkaName).startsWith('ERR__PURGE')) this.deliveryFailure ??= failure;
    });
  }

  /** Connects, then registers the transactional.id (fencing older producers with the same id). */
  override async connect(timeoutMs = 10_000): Promise<void> {
    await super.connect(timeoutMs);
    await this.txn('transaction.init', (done) => this.native.initTransactions(timeoutMs * 3, done), timeoutMs * 3);
  }

  /** Starts a transaction. */
  async begin(): Promise<void> {
    this.deliveryFailure = undefined;
    this.sentOffsets = [];
    await this.txn('transaction.begin', (done) => this.native.beginTransaction(done));
    this.open = true;
  }

  /**
   * Adds records to the open transaction, in order per partition. They are delivered by
   * `commit()`, which fails when any of them did not reach the broker. A full local queue is
   * waited out (flush), never dropped. Once a record of the transaction failed delivery it
   * fails with that record's error. Outside a transaction it fails with KAFKA_INVALID_STATE.
   */
  async produce(records: readonly ProducerRecord[]): Promise<void> {
    if (!this.connected) throw kafkaError('KAFKA_NOT_CONNECTED', 'producer.produce: producer is not connected');
    if (this.hung) throw this.hung;
    // The transaction's duration (transactionCommitted) is its latency: no per-send event here.
    try {
      for (const record of records) {
        for (let attempt = 0; !this.tryEnqueue(record, attempt); attempt++) await this.flush(5_000).catch(() => undefined);
      }
    } catch (err) {
      throw await this.withDeliveryCause(err, 'producer.produce');
    }
  }

  /**
   * Adds the consumer's offsets (next offset to read per partition) to the open transaction; they
   * are published on the offsetsCommitted channel when it commits.
   */
  async sendOffsets(consumer: BatchConsumer, offsets: readonly TopicPartitionOffset[], timeoutMs = 30_000): Promise<void> {
    if (offsets.length === 0) return;
    const plain = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
    try {
      await this.txn('transaction.sendOffsets', (done) => this.native.sendOffsetsToTransaction(plain, consumer.native, timeoutMs, done), timeoutMs);
    } catch (err) {
      throw await this.withDeliveryCause(err, 'transaction.sendOffsets');
    }
    this.sentOffsets.push({ clientId: consumer.clientId, groupId: consumer.groupId, offsets: plain, transactional: true });
  }

  /**
   * Commits the open transaction (flushing its messages first). When a message failed delivery
   * the error is that message's (e.g. KAFKA_TOPIC_NOT_FOUND, with its retryable flag), and the
   * transaction must be aborted.
   */
  async commit(timeoutMs = 30_000): Promise<void> {
    try {
      await this.toCompletion('transaction.commit', (done) => this.native.commitTransaction(timeoutMs, done), timeoutMs);
    } catch (err) {
      throw await this.withDeliveryCause(err, 'transaction.commit');
    }
    this.open = false;
    for (const sent of this.sentOffsets.splice(0)) publish(KAFKA_CHANNELS.offsetsCommitted, sent);
  }

  /** Aborts the open transaction: its messages are never visible to read_committed consumers. */
  async abort(timeoutMs = 30_000): Promise<void> {
    this.open = false;
    this.sentOffsets = [];
    await this.toCompletion('transaction.abort', (done) => this.native.abortTransaction(timeoutMs, done), timeoutMs);
  }

  /**
   * Runs commit or abort until it completes. A retriable error from either (a timeout while the
   * coordinator is away) means the call is still running in librdkafka, and only calling it again
   * completes it: begin and the other call are refused meanwhile (ERR__CONFLICT), so failing the
   * batch, to be aborted and retried, looped for ever (commit) or stopped the process (abort).
   * After a bound, the producer has to be recreated.
   */
  private async toCompletion(operation: 'transaction.commit' | 'transaction.abort', run: (done: (err: unknown) => void) => void, timeoutMs: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.txn(operation, run, timeoutMs);
      } catch (err) {
        if (!stillRunning(err)) throw err;
        if (attempt >= MAX_END_ATTEMPTS) {
          throw kafkaError('KAFKA_FATAL', `${operation} did not complete in ${MAX_END_ATTEMPTS} attempts of ${timeoutMs} ms; the producer must be recreated`, {
            cause: err,
            details: { operation, transactionalId: this.transactionalId, attempts: attempt },
          });
        }
      }
    }
  }

  /**
   * Once a message of the open transaction fails delivery, librdkafka says only that the
   * transaction must abort: ERR__INCONSISTENT from commit, an abortable error from sendOffsets,
   * ERR__STATE from the next enqueue. The failed message's report names the cause (e.g.
   * KAFKA_TOPIC_NOT_FOUND, with its retryable flag), so that is the error. Any other error
   * (fatal, fenced, hung, a timeout) passes through unchanged: a late report left over from an
   * earlier transaction must never relabel it.
   */
  private async withDeliveryCause(err: unknown, operation: string): Promise<unknown> {
    if (!this.open || !mayStemFromDelivery(err)) return err;
    const failure = this.deliveryFailure ?? (await this.awaitDeliveryFailure());
    if (failure === undefined) {
      // Inside a transaction begin() opened, an enqueue is refused only once the transaction
      // must abort (a fatal state refuses with KAFKA_FATAL): abort and retry the batch, as for
      // any abortable error, rather than stop the process.
      if ((err as KafkaError).code !== 'KAFKA_INVALID_STATE') return err;
      return kafkaError('KAFKA_TRANSACTION_ABORTED', `${operation}: the transaction must abort: ${(err as KafkaError).message}`, {
        cause: err,
        details: { operation, transactionalId: this.transactionalId },
      });
    }
    return kafkaError(failure.code, `${operation}: a message failed delivery: ${failure.message}`, {
      cause: err,
      // A report code the catalog does not know says nothing about retrying; the error it
      // replaces does (librdkafka's abortable errors are "abort, then retry the batch").
      retryable: failure.code === 'KAFKA_UNKNOWN' ? (err as KafkaError).retryable : failure.retryable,
      details: { ...failure.details, operation, transactionalId: this.transactionalId },
    });
  }

  /**
   * The failed message's report travels to JS on its own path and can land just after the
   * error of the call that noticed the failure; wait a moment for it, since it names the cause.
   */
  private async awaitDeliveryFailure(): Promise<KafkaError | undefined> {
    for (let i = 0; i < 20 && this.deliveryFailure === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    return this.deliveryFailure;
  }

  /**
   * Enqueues one record: true when it was, false on a full queue (the caller flushes, so the
   * transaction's messages go out, and tries again; from the 4th attempt on it throws).
   */
  private tryEnqueue(record: ProducerRecord, attempt: number): boolean {
    try {
      this.enqueueNative(record, undefined);
      return true;
    } catch (err) {
      const e = translateKafkaError(err, { operation: 'produce', topic: record.topic, transactionalId: this.transactionalId });
      if (e.code !== 'KAFKA_QUEUE_FULL' || attempt >= 3) throw e;
      return false;
    }
  }

  /**
   * Runs a native transactional call. One given a `timeoutMs` that has not returned
   * `hungGraceMs` after it fails with KAFKA_FATAL (not retryable): the native call still holds a
   * worker thread and the transaction state, so the only way on is a new producer — in practice a
   * restart, whose initTransactions fences this one and aborts its open transaction.
   */
  private async txn(operation: string, run: (done: (err: unknown) => void) => void, timeoutMs?: number): Promise<void> {
    if (this.hung) throw this.hung;
    const call = callback((done) => run((err) => done(err)));
    let timer: NodeJS.Timeout | undefined;
    const deadline =
      timeoutMs === undefined
        ? undefined
        : new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              this.hung = kafkaError(
                'KAFKA_FATAL',
                `${operation} did not return ${this.hungGraceMs} ms after its ${timeoutMs} ms timeout (librdkafka can block there while the coordinator is unreachable, confluentinc/librdkafka#5456); the producer must be recreated`,
                { details: { operation, transactionalId: this.transactionalId, timeoutMs } },
              );
              reject(this.hung);
            }, timeoutMs + this.hungGraceMs);
            timer.unref();
          });
    try {
      await (deadline ? Promise.race([call, deadline]) : call);
    } catch (err) {
      if (err === this.hung) {
        call.catch(() => undefined); // if it ever returns, nobody is waiting
        throw err;
      }
      throw translateKafkaError(err, { operation, transactionalId: this.transactionalId });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Calls of commitTransaction or abortTransaction that return "still running" before the producer is given up. */
const MAX_END_ATTEMPTS = 10;

/** librdkafka's answer "retriable" (and neither abortable nor fatal) to commit: call commit again. */
function stillRunning(err: unknown): boolean {
  const raw = (err as KafkaError | undefined)?.cause as { isRetriable?: unknown; isTxnRequiresAbort?: unknown; isFatal?: unknown } | undefined;
  return raw?.isRetriable === true && raw.isTxnRequiresAbort !== true && raw.isFatal !== true;
}

/**
 * Errors a failed message puts the transaction in: messages not delivered (ERR__INCONSISTENT),
 * an abortable transaction, an enqueue refused in that state.
 */
function mayStemFromDelivery(err: unknown): boolean {
  const e = err as KafkaError | undefined;
  return e?.details?.librdkafkaName === 'ERR__INCONSISTENT' || e?.code === 'KAFKA_TRANSACTION_ABORTED' || e?.code === 'KAFKA_INVALID_STATE';
}
