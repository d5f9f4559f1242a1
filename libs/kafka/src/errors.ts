/**
 * The closed list of errors libs/kafka raises, and the ONE place that translates the Kafka
 * client's errors (librdkafka `LibrdKafkaError`, the KafkaJS-compatible `KafkaJSError`, broker
 * error codes read off the wire) into them. `retryable` decides retry versus give up / DLQ.
 */
import { CODES } from '@confluentinc/kafka-javascript';
import { SluiceError } from '@sluice/errors';

/** Every error code libs/kafka raises, with whether retrying the same operation may succeed. */
export const KAFKA_ERRORS = {
  /** No broker answered (bad address, DNS failure, network down). */
  KAFKA_BROKER_UNREACHABLE: { retryable: true },
  /** A request or a produced message timed out. */
  KAFKA_TIMEOUT: { retryable: true },
  /** The local producer queue is full: slow down (HTTP 429) and retry. */
  KAFKA_QUEUE_FULL: { retryable: true },
  /**
   * Leader/coordinator moving, not enough in-sync replicas, throttling, offsets held by an open
   * transaction, a transactional call refused while an earlier one (timed out while the
   * coordinator was away) is still pending: transient broker state.
   */
  KAFKA_BROKER_UNAVAILABLE: { retryable: true },
  /** The topic or partition does not exist (yet): provisioning or metadata propagation lag. */
  KAFKA_TOPIC_NOT_FOUND: { retryable: true },
  /** The group generation changed under a commit (rebalance): re-poll, then commit again. */
  KAFKA_REBALANCE_IN_PROGRESS: { retryable: true },
  /** The current transaction failed and was (or must be) aborted; the batch can be retried. */
  KAFKA_TRANSACTION_ABORTED: { retryable: true },
  /** Another instance with the same transactional.id took over: this producer is dead. */
  KAFKA_PRODUCER_FENCED: { retryable: false },
  /** librdkafka raised a fatal error: the client must be recreated. */
  KAFKA_FATAL: { retryable: false },
  /** The topic already exists (admin create). */
  KAFKA_TOPIC_EXISTS: { retryable: false },
  /** A message is larger than the broker or topic accepts. */
  KAFKA_MESSAGE_TOO_LARGE: { retryable: false },
  /** Bad argument, configuration, partition count or replication factor. */
  KAFKA_INVALID_CONFIG: { retryable: false },
  /**
   * The brokers refused the client's credentials or mechanism (SASL), or the TLS handshake failed
   * (an untrusted or misnamed certificate, an unreadable key): fixing the settings is the only cure.
   */
  KAFKA_AUTHENTICATION_FAILED: { retryable: false },
  /** The principal lacks an ACL for the operation. */
  KAFKA_NOT_AUTHORIZED: { retryable: false },
  /** The client is not connected, or already closed. */
  KAFKA_NOT_CONNECTED: { retryable: false },
  /** The call does not fit the client's state (e.g. send outside an open transaction, seek of an unassigned partition). */
  KAFKA_INVALID_STATE: { retryable: false },
  /** Anything else; retryable only when librdkafka says so. */
  KAFKA_UNKNOWN: { retryable: false },
} as const;

/** A libs/kafka error code. */
export type KafkaErrorCode = keyof typeof KAFKA_ERRORS;

/** A SluiceError whose code is one of {@link KAFKA_ERRORS}. */
export type KafkaError = SluiceError<KafkaErrorCode>;

/** Where an error happened, kept in `details` for logs. */
export interface KafkaErrorContext {
  /** What the lib was doing, e.g. `produce`, `commit`, `admin.createTopics`. */
  operation: string;
  topic?: string;
  [key: string]: unknown;
}

/** Builds a KafkaError with the catalog's retryable flag. */
export function kafkaError(
  code: KafkaErrorCode,
  message: string,
  options: { cause?: unknown; details?: Record<string, unknown>; retryable?: boolean } = {},
): KafkaError {
  return new SluiceError(code, message, {
    retryable: options.retryable ?? KAFKA_ERRORS[code].retryable,
    cause: options.cause,
    details: options.details,
  });
}

const E = CODES.ERRORS;

// librdkafka (negative) and broker (positive) numeric codes → our code. Broker codes read off the
// wire by the admin config requests use the same numbers, so one table serves both.
const BY_NUMBER = new Map<number, KafkaErrorCode>([
  [E.ERR__TRANSPORT, 'KAFKA_BROKER_UNREACHABLE'],
  [E.ERR__ALL_BROKERS_DOWN, 'KAFKA_BROKER_UNREACHABLE'],
  [E.ERR__RESOLVE, 'KAFKA_BROKER_UNREACHABLE'],
  [E.ERR_NETWORK_EXCEPTION, 'KAFKA_BROKER_UNREACHABLE'],
  [E.ERR__TIMED_OUT, 'KAFKA_TIMEOUT'],
  [E.ERR__TIMED_OUT_QUEUE, 'KAFKA_TIMEOUT'],
  [E.ERR__MSG_TIMED_OUT, 'KAFKA_TIMEOUT'],
  [E.ERR_REQUEST_TIMED_OUT, 'KAFKA_TIMEOUT'],
  [E.ERR__QUEUE_FULL, 'KAFKA_QUEUE_FULL'],
  [E.ERR_LEADER_NOT_AVAILABLE, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_NOT_LEADER_FOR_PARTITION, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_NOT_ENOUGH_REPLICAS, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_NOT_COORDINATOR, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_COORDINATOR_NOT_AVAILABLE, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_COORDINATOR_LOAD_IN_PROGRESS, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_NOT_CONTROLLER, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_THROTTLING_QUOTA_EXCEEDED, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_CONCURRENT_TRANSACTIONS, 'KAFKA_BROKER_UNAVAILABLE'],
  // requireStableOffsets: the group has offsets pending in an open transaction; they become
  // stable when it commits or aborts, so asking again later succeeds.
  [E.ERR_UNSTABLE_OFFSET_COMMIT, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_FENCED_LEADER_EPOCH, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_UNKNOWN_LEADER_EPOCH, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR__WAIT_COORD, 'KAFKA_BROKER_UNAVAILABLE'],
  // begin/commit/abort refused because an earlier transactional call timed out and is still
  // pending in librdkafka (the coordinator is away): calling that one again resumes it.
  [E.ERR__CONFLICT, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR__PREV_IN_PROGRESS, 'KAFKA_BROKER_UNAVAILABLE'],
  [E.ERR_UNKNOWN_TOPIC_OR_PART, 'KAFKA_TOPIC_NOT_FOUND'],
  [E.ERR__UNKNOWN_TOPIC, 'KAFKA_TOPIC_NOT_FOUND'],
  [E.ERR__UNKNOWN_PARTITION, 'KAFKA_TOPIC_NOT_FOUND'],
  [E.ERR_UNKNOWN_TOPIC_ID, 'KAFKA_TOPIC_NOT_FOUND'],
  [E.ERR_REBALANCE_IN_PROGRESS, 'KAFKA_REBALANCE_IN_PROGRESS'],
  [E.ERR_ILLEGAL_GENERATION, 'KAFKA_REBALANCE_IN_PROGRESS'],
  [E.ERR_UNKNOWN_MEMBER_ID, 'KAFKA_REBALANCE_IN_PROGRESS'],
  [E.ERR_STALE_MEMBER_EPOCH, 'KAFKA_REBALANCE_IN_PROGRESS'],
  [E.ERR__ASSIGNMENT_LOST, 'KAFKA_REBALANCE_IN_PROGRESS'],
  // The member took longer than max.poll.interval.ms between polls and left the group; the
  // next poll rejoins it (its uncommitted work is redone under the new assignment).
  [E.ERR__MAX_POLL_EXCEEDED, 'KAFKA_REBALANCE_IN_PROGRESS'],
  // librdkafka purges a transactional producer's queue when the transaction must abort (its
  // coordinator or partition leader was lost mid-transaction); the messages were not committed,
  // so the transaction is aborted and the batch retried. (A plain producer purges only on close.)
  [E.ERR__PURGE_QUEUE, 'KAFKA_TRANSACTION_ABORTED'],
  [E.ERR__PURGE_INFLIGHT, 'KAFKA_TRANSACTION_ABORTED'],
  [E.ERR__FENCED, 'KAFKA_PRODUCER_FENCED'],
  [E.ERR_PRODUCER_FENCED, 'KAFKA_PRODUCER_FENCED'],
  [E.ERR_INVALID_PRODUCER_EPOCH, 'KAFKA_PRODUCER_FENCED'],
  [E.ERR_TRANSACTION_COORDINATOR_FENCED, 'KAFKA_PRODUCER_FENCED'],
  [E.ERR_FENCED_INSTANCE_ID, 'KAFKA_PRODUCER_FENCED'],
  [E.ERR__FATAL, 'KAFKA_FATAL'],
  [E.ERR_TOPIC_ALREADY_EXISTS, 'KAFKA_TOPIC_EXISTS'],
  [E.ERR_MSG_SIZE_TOO_LARGE, 'KAFKA_MESSAGE_TOO_LARGE'],
  [E.ERR__INVALID_ARG, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_INVALID_PARTITIONS, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_INVALID_REPLICATION_FACTOR, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_INVALID_CONFIG, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_POLICY_VIOLATION, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_INVALID_REQUEST, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_INVALID_TRANSACTION_TIMEOUT, 'KAFKA_INVALID_CONFIG'],
  [E.ERR_TOPIC_DELETION_DISABLED, 'KAFKA_INVALID_CONFIG'],
  [E.ERR__AUTHENTICATION, 'KAFKA_AUTHENTICATION_FAILED'],
  [E.ERR__SSL, 'KAFKA_AUTHENTICATION_FAILED'],
  [E.ERR_SASL_AUTHENTICATION_FAILED, 'KAFKA_AUTHENTICATION_FAILED'],
  [E.ERR_UNSUPPORTED_SASL_MECHANISM, 'KAFKA_AUTHENTICATION_FAILED'],
  [E.ERR_ILLEGAL_SASL_STATE, 'KAFKA_AUTHENTICATION_FAILED'],
  [E.ERR_TOPIC_AUTHORIZATION_FAILED, 'KAFKA_NOT_AUTHORIZED'],
  [E.ERR_GROUP_AUTHORIZATION_FAILED, 'KAFKA_NOT_AUTHORIZED'],
  [E.ERR_CLUSTER_AUTHORIZATION_FAILED, 'KAFKA_NOT_AUTHORIZED'],
  [E.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'KAFKA_NOT_AUTHORIZED'],
  [E.ERR__STATE, 'KAFKA_INVALID_STATE'],
  [E.ERR_INVALID_TXN_STATE, 'KAFKA_INVALID_STATE'],
  [E.ERR__DESTROY, 'KAFKA_NOT_CONNECTED'],
]);

// Error events reach JS without their code: the binding passes librdkafka's text alone ("Local:
// Authentication failure"; code -1, or none, depending on how the Error crossed into JS). The
// local errors an operator must tell apart (a refused login from a broker that is down) are
// recognised by that text.
const LOCAL_BY_TEXT = new Map<string, number>([
  ['authentication failure', E.ERR__AUTHENTICATION],
  ['ssl error', E.ERR__SSL],
  ['all broker connections are down', E.ERR__ALL_BROKERS_DOWN],
  ['broker transport failure', E.ERR__TRANSPORT],
  ['host resolution failure', E.ERR__RESOLVE],
]);

const NAME_BY_NUMBER = new Map<number, string>(
  Object.entries(E).map(([name, value]) => [value as number, name]),
);

/** The librdkafka name of a numeric error code (`ERR__TRANSPORT`, `ERR_UNKNOWN_TOPIC_OR_PART`…). */
export function librdkafkaErrorName(code: number): string | undefined {
  return NAME_BY_NUMBER.get(code);
}

interface ForeignShape {
  code?: unknown;
  message?: unknown;
  isFatal?: unknown;
  fatal?: unknown;
  isRetriable?: unknown;
  retriable?: unknown;
  isTxnRequiresAbort?: unknown;
  abortable?: unknown;
}

/**
 * Translates anything the Kafka client throws or reports (LibrdKafkaError, KafkaJSError, a
 * numeric code, a plain Error) into a KafkaError. A KafkaError passes through unchanged. The
 * original error is kept as `cause`; its numeric code and name go into `details`.
 */
export function translateKafkaError(err: unknown, context: KafkaErrorContext): KafkaError {
  if (err instanceof SluiceError && err.code in KAFKA_ERRORS) return err as KafkaError;
  const shape: ForeignShape =
    typeof err === 'number' ? { code: err } : typeof err === 'object' && err !== null ? (err as ForeignShape) : {};
  const text = typeof shape.message === 'string' ? shape.message : typeof err === 'string' ? err : '';
  let numeric = typeof shape.code === 'number' ? shape.code : undefined;
  if (numeric === undefined || numeric === -1) numeric = LOCAL_BY_TEXT.get(text.replace(/^local: /i, '').toLowerCase()) ?? numeric;
  const fatal = shape.isFatal === true || shape.fatal === true;
  const abortable = shape.isTxnRequiresAbort === true || shape.abortable === true;
  const clientSaysRetryable = shape.isRetriable === true || shape.retriable === true;

  let code: KafkaErrorCode = numeric === undefined ? 'KAFKA_UNKNOWN' : (BY_NUMBER.get(numeric) ?? 'KAFKA_UNKNOWN');
  // librdkafka flags a transaction error as "abortable" or "fatal" independently of the code:
  // a fatal error outranks everything, an abortable one means "abort, then retry the batch".
  if (fatal && code !== 'KAFKA_PRODUCER_FENCED') code = 'KAFKA_FATAL';
  else if (abortable) code = 'KAFKA_TRANSACTION_ABORTED';
  // The binding reports use-after-close as a plain Error or as ERR__STATE with this text.
  else if ((code === 'KAFKA_UNKNOWN' || code === 'KAFKA_INVALID_STATE') && /not connected|disconnected/i.test(text)) code = 'KAFKA_NOT_CONNECTED';

  const name = numeric === undefined ? undefined : librdkafkaErrorName(numeric);
  const { operation, ...rest } = context;
  return kafkaError(code, `${operation}: ${text || name || String(err)}`, {
    cause: err,
    retryable: code === 'KAFKA_UNKNOWN' ? clientSaysRetryable : undefined,
    details: { operation, ...rest, librdkafkaCode: numeric, librdkafkaName: name },
  });
}
