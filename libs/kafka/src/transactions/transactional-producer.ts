import type { BatchConsumer } from '../consumer/consumer';
import type { TopicPartitionOffset } from '../consumer/types';
import { KAFKA_CHANNELS, publish } from '../channels';
import { callback } from '../connection';
import { translateKafkaError } from '../errors';
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

  constructor(options: TransactionalProducerOptions) {
    super(options, {
      'transactional.id': options.transactionalId,
      'transaction.timeout.ms': options.transactionTimeoutMs ?? 60_000,
    });
    this.transactionalId = options.transactionalId;
  }

  /** Connects, then registers the transactional.id (fencing older producers with the same id). */
  override async connect(timeoutMs = 10_000): Promise<void> {
    await super.connect(timeoutMs);
    await this.txn('transaction.init', (done) => this.native.initTransactions(timeoutMs * 3, done));
  }

  /** Starts a transaction. */
  async begin(): Promise<void> {
    await this.txn('transaction.begin', (done) => this.native.beginTransaction(done));
  }

  /** Adds the consumer's offsets (next offset to read per partition) to the open transaction. */
  async sendOffsets(consumer: BatchConsumer, offsets: readonly TopicPartitionOffset[], timeoutMs = 30_000): Promise<void> {
    if (offsets.length === 0) return;
    const plain = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
    await this.txn('transaction.sendOffsets', (done) => this.native.sendOffsetsToTransaction(plain, consumer.native, timeoutMs, done));
    publish(KAFKA_CHANNELS.offsetsCommitted, { clientId: consumer.clientId, groupId: consumer.groupId, offsets: plain, transactional: true });
  }

  /** Commits the open transaction (flushing its messages first). */
  async commit(timeoutMs = 30_000): Promise<void> {
    await this.txn('transaction.commit', (done) => this.native.commitTransaction(timeoutMs, done));
  }

  /** Aborts the open transaction: its messages are never visible to read_committed consumers. */
  async abort(timeoutMs = 30_000): Promise<void> {
    await this.txn('transaction.abort', (done) => this.native.abortTransaction(timeoutMs, done));
  }

  private async txn(operation: string, run: (done: (err: unknown) => void) => void): Promise<void> {
    try {
      await callback((done) => run((err) => done(err)));
    } catch (err) {
      throw translateKafkaError(err, { operation, transactionalId: this.transactionalId });
    }
  }
}
