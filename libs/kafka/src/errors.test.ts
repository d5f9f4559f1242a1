import { CODES } from '@confluentinc/kafka-javascript';
import { SluiceError } from '@sluice/errors';
import { KAFKA_ERRORS, kafkaError, librdkafkaErrorName, translateKafkaError } from './errors';

const E = CODES.ERRORS;
const ctx = { operation: 'test.op', topic: 't' };

describe('translateKafkaError', () => {
  it.each([
    [E.ERR__TRANSPORT, 'KAFKA_BROKER_UNREACHABLE', true],
    [E.ERR__ALL_BROKERS_DOWN, 'KAFKA_BROKER_UNREACHABLE', true],
    [E.ERR__RESOLVE, 'KAFKA_BROKER_UNREACHABLE', true],
    [E.ERR__MSG_TIMED_OUT, 'KAFKA_TIMEOUT', true],
    [E.ERR__QUEUE_FULL, 'KAFKA_QUEUE_FULL', true],
    [E.ERR_NOT_ENOUGH_REPLICAS, 'KAFKA_BROKER_UNAVAILABLE', true],
    [E.ERR_UNKNOWN_TOPIC_OR_PART, 'KAFKA_TOPIC_NOT_FOUND', true],
    [E.ERR__UNKNOWN_TOPIC, 'KAFKA_TOPIC_NOT_FOUND', true],
    [E.ERR_ILLEGAL_GENERATION, 'KAFKA_REBALANCE_IN_PROGRESS', true],
    [E.ERR__PURGE_QUEUE, 'KAFKA_TRANSACTION_ABORTED', true],
    [E.ERR__PURGE_INFLIGHT, 'KAFKA_TRANSACTION_ABORTED', true],
    [E.ERR__FENCED, 'KAFKA_PRODUCER_FENCED', false],
    [E.ERR_PRODUCER_FENCED, 'KAFKA_PRODUCER_FENCED', false],
    [E.ERR_TOPIC_ALREADY_EXISTS, 'KAFKA_TOPIC_EXISTS', false],
    [E.ERR_MSG_SIZE_TOO_LARGE, 'KAFKA_MESSAGE_TOO_LARGE', false],
    [E.ERR_INVALID_CONFIG, 'KAFKA_INVALID_CONFIG', false],
    [E.ERR_TOPIC_AUTHORIZATION_FAILED, 'KAFKA_NOT_AUTHORIZED', false],
    [E.ERR__AUTHENTICATION, 'KAFKA_AUTHENTICATION_FAILED', false],
    [E.ERR__SSL, 'KAFKA_AUTHENTICATION_FAILED', false],
    [E.ERR_SASL_AUTHENTICATION_FAILED, 'KAFKA_AUTHENTICATION_FAILED', false],
    [E.ERR_UNSUPPORTED_SASL_MECHANISM, 'KAFKA_AUTHENTICATION_FAILED', false],
    [E.ERR__STATE, 'KAFKA_INVALID_STATE', false],
    [E.ERR_INVALID_TXN_STATE, 'KAFKA_INVALID_STATE', false],
  ])('maps librdkafka code %i to %s (retryable %s)', (code, expected, retryable) => {
    const native = Object.assign(new Error('native text'), { code, origin: 'kafka' });
    const err = translateKafkaError(native, ctx);
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.code).toBe(expected);
    expect(err.retryable).toBe(retryable);
    expect(err.cause).toBe(native);
    expect(err.message).toBe('test.op: native text');
    expect(err.details).toMatchObject({ operation: 'test.op', topic: 't', librdkafkaCode: code, librdkafkaName: librdkafkaErrorName(code) });
  });

  it('recognises the error events the binding passes without their code (code -1, librdkafka text)', () => {
    // The shape of LibrdKafkaError.create(new Error('Local: Authentication failure')), as event.error gives it.
    const event = (message: string) => ({ origin: 'local', message, code: -1, errno: -1 });
    expect(translateKafkaError(event('authentication failure'), ctx)).toMatchObject({ code: 'KAFKA_AUTHENTICATION_FAILED', retryable: false });
    expect(translateKafkaError(event('ssl error'), ctx)).toMatchObject({ code: 'KAFKA_AUTHENTICATION_FAILED' });
    expect(translateKafkaError(event('all broker connections are down'), ctx)).toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true });
    expect(translateKafkaError(event('broker transport failure'), ctx).details).toMatchObject({ librdkafkaName: 'ERR__TRANSPORT' });
    expect(translateKafkaError(event('something else'), ctx).code).toBe('KAFKA_UNKNOWN');
    // The same event when the binding kept the Error as it was: no code, librdkafka's full text.
    expect(translateKafkaError(new Error('Local: Authentication failure'), ctx).code).toBe('KAFKA_AUTHENTICATION_FAILED');
    // A real code is never second-guessed by its text.
    expect(translateKafkaError({ code: E.ERR__TIMED_OUT, message: 'authentication failure' }, ctx).code).toBe('KAFKA_TIMEOUT');
  });

  it('lets the fatal flag outrank the code, except for fencing', () => {
    expect(translateKafkaError({ code: E.ERR__TIMED_OUT, isFatal: true, message: 'x' }, ctx).code).toBe('KAFKA_FATAL');
    expect(translateKafkaError({ code: E.ERR__FENCED, isFatal: true, message: 'x' }, ctx).code).toBe('KAFKA_PRODUCER_FENCED');
  });

  it('maps an abortable transaction error to KAFKA_TRANSACTION_ABORTED (retryable), for both API shapes', () => {
    const rd = translateKafkaError({ code: E.ERR_INVALID_RECORD, isTxnRequiresAbort: true, message: 'x' }, ctx);
    const kjs = translateKafkaError({ code: E.ERR_INVALID_RECORD, abortable: true, message: 'x' }, ctx);
    for (const err of [rd, kjs]) {
      expect(err.code).toBe('KAFKA_TRANSACTION_ABORTED');
      expect(err.retryable).toBe(true);
    }
  });

  it('maps unstable offsets (requireStableOffsets while a transaction is open) to a retryable code, not KAFKA_UNKNOWN', () => {
    // The shape admin.listConsumerGroupOffsets reports per partition (or per group) while another
    // producer's transaction holds uncommitted offsets for the group.
    for (const reported of [
      { code: E.ERR_UNSTABLE_OFFSET_COMMIT, message: 'Broker: There are unstable offsets that need to be cleared', isRetriable: false },
      Object.assign(new Error('Broker: There are unstable offsets that need to be cleared'), { code: E.ERR_UNSTABLE_OFFSET_COMMIT }),
      E.ERR_UNSTABLE_OFFSET_COMMIT,
    ]) {
      const err = translateKafkaError(reported, { operation: 'admin.fetchCommittedOffsets', groupId: 'g' });
      expect(err.code).toBe('KAFKA_BROKER_UNAVAILABLE');
      expect(err.retryable).toBe(true);
      expect(err.details).toMatchObject({ librdkafkaCode: E.ERR_UNSTABLE_OFFSET_COMMIT, librdkafkaName: 'ERR_UNSTABLE_OFFSET_COMMIT' });
    }
  });

  it('maps a call refused behind a pending transactional call, and a member past max.poll.interval.ms, to retryable codes', () => {
    // The binding reports begin's errors without librdkafka's flags: the code alone must say it.
    for (const code of [E.ERR__CONFLICT, E.ERR__PREV_IN_PROGRESS]) {
      expect(translateKafkaError({ code, message: 'Conflicting use' }, { operation: 'transaction.begin' })).toMatchObject({ code: 'KAFKA_BROKER_UNAVAILABLE', retryable: true });
    }
    // librdkafka puts it on the consumer queue; the next poll rejoins the group.
    expect(translateKafkaError(Object.assign(new Error('Application maximum poll interval exceeded'), { code: E.ERR__MAX_POLL_EXCEEDED }), { operation: 'consume' }))
      .toMatchObject({ code: 'KAFKA_REBALANCE_IN_PROGRESS', retryable: true });
  });

  it('keeps librdkafka retriable flag for codes it does not know', () => {
    expect(translateKafkaError({ code: 9999, isRetriable: true }, ctx)).toMatchObject({ code: 'KAFKA_UNKNOWN', retryable: true });
    expect(translateKafkaError({ code: 9999, retriable: true }, ctx)).toMatchObject({ code: 'KAFKA_UNKNOWN', retryable: true });
    expect(translateKafkaError({ code: 9999 }, ctx)).toMatchObject({ code: 'KAFKA_UNKNOWN', retryable: false });
  });

  it('handles hostile inputs without throwing', () => {
    for (const input of [undefined, null, 42, 'boom', Symbol('s'), { code: 'not-a-number' }, [], new Error('Producer not connected')]) {
      const err = translateKafkaError(input, ctx);
      expect(err).toBeInstanceOf(SluiceError);
      expect(Object.keys(KAFKA_ERRORS)).toContain(err.code);
    }
    expect(translateKafkaError(new Error('Producer not connected'), ctx).code).toBe('KAFKA_NOT_CONNECTED');
    expect(translateKafkaError({ code: E.ERR__STATE, message: 'consumer is disconnected' }, ctx).code).toBe('KAFKA_NOT_CONNECTED');
    expect(translateKafkaError(E.ERR__QUEUE_FULL, ctx).code).toBe('KAFKA_QUEUE_FULL');
  });

  it('passes a KafkaError through unchanged and survives JSON.stringify', () => {
    const original = kafkaError('KAFKA_TIMEOUT', 'x', { details: { a: 1 } });
    expect(translateKafkaError(original, ctx)).toBe(original);
    const json = JSON.parse(JSON.stringify(translateKafkaError({ code: E.ERR__TRANSPORT, message: 'down' }, ctx)));
    expect(json).toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true, details: { operation: 'test.op' } });
  });

  it('gives every catalog entry a boolean retryable flag and an <AREA>_<CONDITION> name', () => {
    for (const [code, entry] of Object.entries(KAFKA_ERRORS)) {
      expect(code).toMatch(/^KAFKA_[A-Z_]+$/);
      expect(typeof entry.retryable).toBe('boolean');
    }
  });
});
