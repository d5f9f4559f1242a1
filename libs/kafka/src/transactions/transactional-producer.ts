import type { BatchConsumer } from '../consumer/consumer';
import type { TopicPartitionOffset } from '../consumer/types';
import { KAFKA_CHANNELS, publish } from '../channels';
import { callback } from '../connection';
import { kafkaError, translateKafkaError, type KafkaError } from '../errors';
import { PRODUCER_DEFAULTS } from '../producer/options';
import { KafkaProducer } from '../producer/producer';
import type { TransactionalProducerOptions } from './options';

/**
 * An idempotent producer bound to one `transactional.id`. Messages sent between `begin()` and
 * `commit()` become visible to read_committed consumers atomically with the consumer offsets
 * given to `sendOffsets()`, or not at all.
 */
export class TransactionalProducer extends KafkaProducer {
  /** The transactional.id of this instance. */
  readonly transactionalId: string;
  private readonly hungGraceMs: number;
  /** Set once a call outlived its timeout: the native client is stuck and every later call fails with it. */
  private hung: KafkaError | undefined;

  constructor(options: TransactionalProducerOptions) {
    const transactionTimeoutMs = options.transactionTimeoutMs ?? 60_000;
    // A message cannot outlive its transaction: librdkafka refuses to start when the delivery
    // timeout is the longer one, so it follows a shorter transaction timeout.
    const deliveryTimeoutMs = Math.min(options.deliveryTimeoutMs ?? PRODUCER_DEFAULTS.deliveryTimeoutMs, transactionTimeoutMs);
    super({ ...options, deliveryTimeoutMs }, {
      'transactional.id': options.transactionalId,
      'transaction.timeout.ms': transactionTimeoutMs,
    });
    this.transactionalId = options.transactionalId;
    this.hungGraceMs = options.hungGraceMs ?? 15_000;
  }

  /** Connects, then registers the transactional.id (fencing older producers with the same id). */
  override async connect(timeoutMs = 10_000): Promise<void> {
    await super.connect(timeoutMs);
    await this.txn('transaction.init', (done) => this.native.initTransactions(timeoutMs * 3, done), timeoutMs * 3);
  }

  /** Starts a transaction. */
  async begin(): Promise<void> {
    await this.txn('transaction.begin', (done) => this.native.beginTransaction(done));
  }

  /** Adds the consumer's offsets (next offset to read per partition) to the open transaction. */
  async sendOffsets(consumer: BatchConsumer, offsets: readonly TopicPartitionOffset[], timeoutMs = 30_000): Promise<void> {
    if (offsets.length === 0) return;
    const plain = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
    await this.txn('transaction.sendOffsets', (done) => this.native.sendOffsetsToTransaction(plain, consumer.native, timeoutMs, done), timeoutMs);
    publish(KAFKA_CHANNELS.offsetsCommitted, { clientId: consumer.clientId, groupId: consumer.groupId, offsets: plain, transactional: true });
  }

  /** Commits the open transaction (flushing its messages first). */
  async commit(timeoutMs = 30_000): Promise<void> {
    await this.txn('transaction.commit', (done) => this.native.commitTransaction(timeoutMs, done), timeoutMs);
  }

  /** Aborts the open transaction: its messages are never visible to read_committed consumers. */
  async abort(timeoutMs = 30_000): Promise<void> {
    await this.txn('transaction.abort', (done) => this.native.abortTransaction(timeoutMs, done), timeoutMs);
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
