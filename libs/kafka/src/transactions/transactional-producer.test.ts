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

describe('TransactionalProducer delivery failures', () => {
  const begin = (done: Done) => done(null);
  const abortable = (message: string) => Object.assign(new Error(message), { code: CODES.ERRORS.ERR__STATE, isTxnRequiresAbort: true });
  const report = (producer: TransactionalProducer, code: number, message: string) =>
    (producer as unknown as { native: { emit: (...args: unknown[]) => void } }).native.emit('delivery-report', Object.assign(new Error(message), { code }), { topic: 't', partition: 0 });

  it('names the failed message when the transaction must abort, keeping the retry flag of an error the catalog does not know', async () => {
    const producer = producerWith({
      beginTransaction: begin,
      sendOffsetsToTransaction: (_o: unknown, _c: unknown, _t: number, done: Done) => done(abortable('Operation not valid in state AbortableError')),
    });
    await producer.begin();
    report(producer, CODES.ERRORS.ERR_MSG_SIZE_TOO_LARGE, 'Broker: Message size too large');
    await expect(producer.sendOffsets(consumer, offsets)).rejects.toMatchObject({ code: 'KAFKA_MESSAGE_TOO_LARGE', retryable: false, details: { operation: 'transaction.sendOffsets' } });

    const other = producerWith({
      beginTransaction: begin,
      sendOffsetsToTransaction: (_o: unknown, _c: unknown, _t: number, done: Done) => done(abortable('Operation not valid in state AbortableError')),
    });
    await other.begin();
    report(other, 12345, 'a code no catalog knows');
    await expect(other.sendOffsets(consumer, offsets)).rejects.toMatchObject({ code: 'KAFKA_UNKNOWN', retryable: true });
  });

  it('never relabels a fenced commit with a report it holds', async () => {
    const producer = producerWith({
      beginTransaction: begin,
      commitTransaction: (_t: number, done: Done) => done(Object.assign(new Error('Broker: Producer attempted an operation with an old epoch'), { code: CODES.ERRORS.ERR_PRODUCER_FENCED, isFatal: true })),
    });
    await producer.begin();
    report(producer, CODES.ERRORS.ERR_MSG_SIZE_TOO_LARGE, 'Broker: Message size too large');
    await expect(producer.commit(30)).rejects.toMatchObject({ code: 'KAFKA_PRODUCER_FENCED', retryable: false });
  });
});

describe('TransactionalProducer commit that times out', () => {
  // librdkafka: a retriable commit error means the commit is still in progress; begin and abort
  // are refused with ERR__CONFLICT until commit is called again.
  const stillRunning = () => Object.assign(new Error('Local: Timed out'), { code: CODES.ERRORS.ERR__TIMED_OUT, isRetriable: true });

  it('calls commit again until it completes instead of failing the batch (which could then never begin again)', async () => {
    let calls = 0;
    const producer = producerWith({
      beginTransaction: (done: Done) => done(null),
      commitTransaction: (_t: number, done: Done) => done(++calls < 3 ? stillRunning() : null),
    });
    await producer.begin();
    await expect(producer.commit(30)).resolves.toBeUndefined();
    expect(calls).toBe(3);
  });

  it('gives the producer up (KAFKA_FATAL) when the commit never completes', async () => {
    let calls = 0;
    const producer = producerWith({
      beginTransaction: (done: Done) => done(null),
      commitTransaction: (_t: number, done: Done) => ((calls += 1), done(stillRunning())),
    });
    await producer.begin();
    await expect(producer.commit(30)).rejects.toMatchObject({ code: 'KAFKA_FATAL', retryable: false, details: { attempts: 10 } });
    expect(calls).toBe(10);
  });

  it('calls abort again the same way when it times out, so the next begin is not refused behind it', async () => {
    let calls = 0;
    const producer = producerWith({
      beginTransaction: (done: Done) => done(null),
      abortTransaction: (_t: number, done: Done) => done(++calls < 3 ? stillRunning() : null),
    });
    await producer.begin();
    await expect(producer.abort(30)).resolves.toBeUndefined();
    expect(calls).toBe(3);
    await expect(producer.begin()).resolves.toBeUndefined();

    let forever = 0;
    const stuck = producerWith({ beginTransaction: (done: Done) => done(null), abortTransaction: (_t: number, done: Done) => ((forever += 1), done(stillRunning())) });
    await stuck.begin();
    await expect(stuck.abort(30)).rejects.toMatchObject({ code: 'KAFKA_FATAL', retryable: false, details: { operation: 'transaction.abort', attempts: 10 } });
    expect(forever).toBe(10);
  });

  it('does not call commit again for an abortable or a fatal error', async () => {
    for (const flags of [{ isTxnRequiresAbort: true }, { isFatal: true }]) {
      let calls = 0;
      const producer = producerWith({
        beginTransaction: (done: Done) => done(null),
        commitTransaction: (_t: number, done: Done) => ((calls += 1), done(Object.assign(stillRunning(), flags))),
      });
      await producer.begin();
      await expect(producer.commit(30)).rejects.toMatchObject({ code: flags.isFatal ? 'KAFKA_FATAL' : 'KAFKA_TRANSACTION_ABORTED' });
      expect(calls).toBe(1);
    }
  });
});

