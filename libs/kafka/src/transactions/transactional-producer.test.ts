import { CODES } from '@confluentinc/kafka-javascript';
import type { BatchConsumer } from '../consumer/consumer';
import { TransactionalProducer } from './transactional-producer';

type Done = (err: unknown) => void;

/** A producer whose native transactional calls are stubs (never connected to a broker). */
function producerWith(native: Record<string, (...args: never[]) => void>, hungGraceMs = 50): TransactionalProducer {
  const producer = new TransactionalProducer({ brokers: '127.0.0.1:1', transactionalId: 'tx-test', hungGraceMs });
  Object.assign((producer as unknown as { native: object }).native, native);
  return producer;
}

const consumer = { native: {}, clientId: 'c', groupId: 'g' } as unknown as BatchConsumer;
const offsets = [{ topic: 't', partition: 0, offset: 5 }];

describe('TransactionalProducer watchdog', () => {
  it('fails a call that outlives its timeout with KAFKA_FATAL, and every later call at once', async () => {
    const producer = producerWith({ sendOffsetsToTransaction: () => undefined /* never calls back (librdkafka#5456) */ });
    const started = Date.now();
    await expect(producer.sendOffsets(consumer, offsets, 20)).rejects.toMatchObject({ code: 'KAFKA_FATAL', retryable: false, details: { operation: 'transaction.sendOffsets', timeoutMs: 20 } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    // The native client is stuck: an abort must not be attempted again (it would block too).
    let aborted = false;
    Object.assign((producer as unknown as { native: object }).native, { abortTransaction: (_t: number, done: Done) => ((aborted = true), done(null)) });
    await expect(producer.abort()).rejects.toMatchObject({ code: 'KAFKA_FATAL' });
    expect(aborted).toBe(false);
  });

  it('passes through a call that returns in time, and translates its error', async () => {
    const producer = producerWith({
      commitTransaction: (_t: number, done: Done) => setTimeout(() => done(null), 10),
      abortTransaction: (_t: number, done: Done) => done(Object.assign(new Error('Broker: Producer attempted an operation with an old epoch'), { code: CODES.ERRORS.ERR_PRODUCER_FENCED })),
    });
    await expect(producer.commit(30)).resolves.toBeUndefined();
    await expect(producer.abort(30)).rejects.toMatchObject({ code: 'KAFKA_PRODUCER_FENCED' });
  });
});
