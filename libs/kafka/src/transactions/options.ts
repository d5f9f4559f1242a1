import type { ConsumerOptions } from '../consumer/options';
import type { ProducerOptions } from '../producer/options';
import type { ConsumedMessage } from '../consumer/types';
import type { ProducerRecord } from '../producer/types';

/** Transactional producer settings. */
export interface TransactionalProducerOptions extends ProducerOptions {
  /**
   * Stable id of THIS instance (e.g. `validate-0`, from the pod ordinal): a restarted instance
   * with the same id fences its zombie predecessor. Two live instances must never share one.
   */
  transactionalId: string;
  /**
   * Broker aborts a transaction open longer than this (`transaction.timeout.ms`); default 60 000.
   * The delivery timeout is capped to it.
   */
  transactionTimeoutMs?: number;
  /**
   * How long past its own timeout a transactional call may run before the producer counts as
   * hung (KAFKA_FATAL); default 15 000. librdkafka can ignore the timeout of
   * `send_offsets_to_transaction` while the group coordinator is unreachable
   * (confluentinc/librdkafka#5456): the call then never returns.
   */
  hungGraceMs?: number;
}

/** Turns one consumed batch into the records to produce; must be deterministic to be replay-safe. */
export type Transform = (batch: ConsumedMessage[]) => Promise<ProducerRecord[]> | ProducerRecord[];

/** Consume-transform-produce loop settings. Consumer isolation is forced to read_committed. */
export interface TransactionalProcessorOptions {
  consumer: Omit<ConsumerOptions, 'isolationLevel'>;
  producer: TransactionalProducerOptions;
  transform: Transform;
  /** First retry delay after a retryable failure, ms (doubles up to 5 s); default 100. */
  retryBackoffMs?: number;
  /**
   * Called as each phase of a batch starts (poll, begin, transform, send, offsets, commit, abort,
   * rewind): for liveness checks and stall reports. The offsets travel from `begin` on; `offsets`
   * is the wait for them (also before an abort).
   */
  onStep?: (step: string) => void;
  /** Called with each non-empty batch as soon as it is polled, before its transaction begins; a throw fails and rewinds the batch. */
  onPolled?: (batch: readonly ConsumedMessage[]) => void;
  /**
   * Called with the messages fetched ahead while a transaction commits (the start of the next
   * batch, in order, a slice at a time), so work that depends only on a message can start before its batch is
   * polled. They may still be dropped (a rebalance, a rewind) or arrive in a later batch: the
   * batch that `transform` gets decides. Must not throw (a throw is ignored).
   */
  onFetchedAhead?: (messages: readonly ConsumedMessage[]) => void;
}

/** What one processed batch did. */
export interface ProcessResult {
  /** Messages consumed (and whose offsets were committed in the transaction). */
  input: number;
  /** Records produced in the transaction. */
  output: number;
}
