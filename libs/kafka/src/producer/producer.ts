import { Producer, type DeliveryReport as NativeReport, type LibrdKafkaError, type MessageHeader } from '@confluentinc/kafka-javascript';
import { KAFKA_CHANNELS, publish } from '../channels';
import { baseProperties, callback, type RdkafkaProperties } from '../connection';
import { kafkaError, translateKafkaError, type KafkaError } from '../errors';
import { explainUnreachable } from '../wire/connection';
import { PRODUCER_DEFAULTS, type ProducerOptions } from './options';
import type { DeliveryReport, ProducerRecord, SendOutcome, SendSuccess } from './types';

/**
 * The messages of one send call that librdkafka holds: delivery reports fill in `outcomes` by
 * index, and `settled` resolves when the last one arrived. One promise per call, not per message.
 */
class InFlight {
  readonly outcomes: Array<SendOutcome | undefined>;
  readonly settled: Promise<void>;
  /** Messages handed to librdkafka: indices 0 .. enqueued-1. */
  enqueued = 0;
  /** Enqueued messages whose report has not arrived. */
  waiting = 0;
  private resolve!: () => void;

  constructor(size: number) {
    this.outcomes = new Array<SendOutcome | undefined>(size);
    this.settled = new Promise<void>((resolve) => (this.resolve = resolve));
  }

  /** Counts one more message handed to librdkafka. */
  add(): void {
    this.enqueued++;
    this.waiting++;
  }

  /** Records the outcome of message `index`; false when it was not awaited (unknown or already settled). */
  settle(index: number, outcome: SendOutcome): boolean {
    if (index >= this.enqueued || this.outcomes[index] !== undefined) return false;
    this.outcomes[index] = outcome;
    this.waiting--;
    if (this.waiting === 0) this.resolve();
    return true;
  }
}

/** A message's opaque: which call, which record. */
interface Slot {
  readonly call: InFlight;
  readonly index: number;
}

/** librdkafka properties of a producer: defaults, caller overrides, then the invariants. */
export function producerProperties(options: ProducerOptions): RdkafkaProperties {
  const o = { ...PRODUCER_DEFAULTS, ...options };
  return {
    'compression.codec': o.compression,
    'linger.ms': o.lingerMs,
    'batch.size': o.batchBytes,
    'batch.num.messages': o.batchMessages,
    'queue.buffering.max.messages': o.maxQueueMessages,
    'queue.buffering.max.kbytes': o.maxQueueKbytes,
    'message.timeout.ms': o.deliveryTimeoutMs,
    'topic.metadata.propagation.max.ms': o.unknownTopicTimeoutMs,
    ...baseProperties(options),
    ...PRODUCER_INVARIANTS,
  };
}

// Every ack means "on all in-sync replicas, once", and keys land where the Java client (and
// murmur2.ts, and the silver buckets) say they do. Applied last, over any override.
const PRODUCER_INVARIANTS = Object.freeze({
  acks: 'all',
  'enable.idempotence': true,
  partitioner: 'murmur2_random',
});

/**
 * Which delivery reports librdkafka hands to JS: every message's (a native-to-JS call and an
 * object per message), or only failed ones (`delivery.report.only.error`).
 */
export type DeliveryReports = 'all' | 'errors';

/**
 * The native producer both {@link KafkaProducer} and the transactional producer build on:
 * connect, enqueue, flush, close, client errors.
 */
export abstract class ProducerClient {
  /** Client id used in events. */
  readonly clientId: string;
  protected readonly native: Producer;
  protected connected = false;
  private closing: Promise<void> | undefined;

  /** `extra`: librdkafka properties a subclass adds (e.g. `transactional.id`); the invariants still win. */
  protected constructor(
    private readonly options: ProducerOptions,
    deliveryReports: DeliveryReports,
    extra: RdkafkaProperties = {},
  ) {
    this.clientId = options.clientId ?? 'sluice';
    this.native = new Producer({
      ...producerProperties(options),
      ...extra,
      ...PRODUCER_INVARIANTS,
      dr_cb: true,
      'delivery.report.only.error': deliveryReports === 'errors',
    } as never);
    this.native.on('event.error', (err) => {
      const e = translateKafkaError(err, { operation: 'producer' });
      publish(KAFKA_CHANNELS.clientError, { clientId: this.clientId, code: e.code, retryable: e.retryable, message: e.message });
    });
  }

  /** Connects and fetches metadata; fails with a KafkaError (e.g. KAFKA_BROKER_UNREACHABLE). */
  async connect(timeoutMs = 10_000): Promise<void> {
    try {
      await callback((done) => this.native.connect({ timeout: timeoutMs }, (err) => done(err)));
    } catch (err) {
      throw await explainUnreachable(this.options, translateKafkaError(err, { operation: 'producer.connect' }), timeoutMs);
    }
    // Delivery reports are served by librdkafka's background thread: no JS timer to poll.
    this.native.setPollInBackground(true);
    this.connected = true;
  }

  /** Waits until every queued message reached the broker (or failed), or the timeout passed. */
  async flush(timeoutMs = 30_000): Promise<void> {
    if (!this.connected) return;
    try {
      await callback((done) => this.native.flush(timeoutMs, (err) => done(err)));
    } catch (err) {
      throw translateKafkaError(err, { operation: 'producer.flush' });
    }
  }

  /** Flushes (up to `timeoutMs`), then disconnects. Idempotent. */
  close(timeoutMs = 30_000): Promise<void> {
    this.closing ??= this.doClose(timeoutMs);
    return this.closing;
  }

  /** Called once the native client disconnected: settle whatever still waits on it. */
  protected onClosed(): void {}

  /**
   * Hands one message to librdkafka. Throws synchronously on a full queue, a bad argument or a
   * wrong transactional state (nothing was enqueued then).
   */
  protected enqueueNative(record: ProducerRecord, opaque: unknown): void {
    this.native.produce(
      record.topic,
      record.partition ?? -1,
      toBuffer(record.value),
      record.key ?? null,
      record.timestamp ?? null,
      opaque,
      toHeaders(record.headers),
    );
  }

  private async doClose(timeoutMs: number): Promise<void> {
    if (!this.connected) return;
    await this.flush(timeoutMs).catch(() => undefined);
    this.connected = false;
    await callback((done) => this.native.disconnect(timeoutMs, (err) => done(err))).catch(() => undefined);
    this.onClosed();
  }
}

/**
 * Idempotent producer (acks=all). `send`/`sendBatch` resolve only once the broker acknowledged
 * every message (delivery reports); they fail fast with KAFKA_QUEUE_FULL when the local queue
 * is full, so callers can shed load (HTTP 429) instead of buffering without bound.
 */
export class KafkaProducer extends ProducerClient {
  /** Messages this producer may hold awaiting delivery reports (`maxQueueMessages`). */
  readonly queueCapacity: number;
  /** Send calls with messages awaiting delivery reports. */
  private readonly inFlight = new Set<InFlight>();
  private unreported = 0;

  constructor(options: ProducerOptions) {
    super(options, 'all');
    this.queueCapacity = options.maxQueueMessages ?? PRODUCER_DEFAULTS.maxQueueMessages;
    this.native.on('delivery-report', (err, report) => this.onDelivery(err, report));
  }

  /** Messages handed to librdkafka whose delivery report has not arrived yet. */
  get queueDepth(): number {
    return this.unreported;
  }

  /** True when `count` more messages fit under {@link queueCapacity}: check before accepting work. */
  hasCapacity(count = 1): boolean {
    return this.unreported + count <= this.queueCapacity;
  }

  /** Produces one message; resolves with its offset once the broker acknowledged it. */
  async send(record: ProducerRecord): Promise<DeliveryReport> {
    const [report] = await this.sendBatch([record]);
    return report;
  }

  /**
   * Produces messages (order kept per partition); resolves when ALL are acknowledged, in input
   * order. If any fails, waits until every enqueued message settled, then rejects with the first
   * error (details: `delivered`, `failed`, `notSent`): a retry may duplicate the delivered ones.
   */
  async sendBatch(records: readonly ProducerRecord[]): Promise<DeliveryReport[]> {
    if (!this.connected) throw kafkaError('KAFKA_NOT_CONNECTED', 'producer.send: producer is not connected');
    const { outcomes, firstError, delivered, failed, notSent } = await this.produceAll(records);
    if (firstError !== undefined) {
      throw kafkaError(firstError.code, firstError.message, {
        cause: firstError,
        retryable: firstError.retryable,
        details: { ...firstError.details, delivered, failed, notSent },
      });
    }
    return outcomes.map((o) => (o as SendSuccess).report);
  }

  /**
   * Like {@link sendBatch}, but never rejects: resolves, once every enqueued message settled,
   * with one outcome per record in input order — its delivery report, or the KafkaError that
   * record failed with. A full local queue stops enqueueing (per-partition order): that record
   * and every later one fail with KAFKA_QUEUE_FULL, unsent. Retrying only the failed records can
   * put them after later records of the same partition that succeeded.
   */
  async sendBatchSettled(records: readonly ProducerRecord[]): Promise<SendOutcome[]> {
    if (!this.connected) {
      const error = kafkaError('KAFKA_NOT_CONNECTED', 'producer.send: producer is not connected');
      return records.map(() => ({ ok: false, error }));
    }
    return (await this.produceAll(records)).outcomes;
  }

  /** Enqueues until the first enqueue error, waits for every delivery report, publishes the produce event. */
  private async produceAll(records: readonly ProducerRecord[]) {
    const started = performance.now();
    const call = new InFlight(records.length);
    let bytes = 0;
    let enqueueError: KafkaError | undefined;
    for (const record of records) {
      try {
        this.enqueueNative(record, { call, index: call.enqueued } satisfies Slot);
      } catch (err) {
        enqueueError = translateKafkaError(err, { operation: 'produce', topic: record.topic });
        break;
      }
      call.add();
      bytes += sizeOf(record.value);
    }
    const enqueued = call.enqueued;
    if (call.waiting > 0) {
      this.unreported += call.waiting;
      this.inFlight.add(call);
      publish(KAFKA_CHANNELS.producerQueue, { clientId: this.clientId, depth: this.unreported });
      await call.settled;
      publish(KAFKA_CHANNELS.producerQueue, { clientId: this.clientId, depth: this.unreported });
    }
    let failed = 0;
    let firstError: KafkaError | undefined;
    const outcomes: SendOutcome[] = records.map((_, i) => {
      const outcome = call.outcomes[i] ?? { ok: false, error: enqueueError as KafkaError };
      if (!outcome.ok && i < enqueued) {
        failed++;
        firstError ??= outcome.error;
      }
      return outcome;
    });
    firstError = enqueueError ?? firstError;
    const delivered = enqueued - failed;
    if (firstError !== undefined) {
      publish(KAFKA_CHANNELS.produceFailed, { clientId: this.clientId, count: records.length, failed: records.length - delivered, code: firstError.code });
    } else {
      publish(KAFKA_CHANNELS.produceAcked, { clientId: this.clientId, count: records.length, bytes, latencyMs: performance.now() - started });
    }
    return { outcomes, firstError, delivered, failed, notSent: records.length - enqueued };
  }

  /** Messages still unacknowledged at close fail with KAFKA_NOT_CONNECTED, so no caller waits forever. */
  protected override onClosed(): void {
    const error = kafkaError('KAFKA_NOT_CONNECTED', 'produce: producer closed before the broker acknowledged the message');
    for (const call of [...this.inFlight]) {
      for (let i = 0; i < call.enqueued && call.waiting > 0; i++) this.settle({ call, index: i }, { ok: false, error });
    }
  }

  private onDelivery(err: LibrdKafkaError | null | undefined, report: NativeReport): void {
    const slot = report.opaque as Slot | undefined;
    if (slot === undefined || !this.inFlight.has(slot.call)) return;
    this.settle(
      slot,
      err
        ? { ok: false, error: translateKafkaError(err, { operation: 'produce', topic: report.topic }) }
        : { ok: true, report: { topic: report.topic, partition: report.partition, offset: report.offset, timestamp: report.timestamp } },
    );
  }

  private settle(slot: Slot, outcome: SendOutcome): void {
    if (!slot.call.settle(slot.index, outcome)) return;
    this.unreported--;
    if (slot.call.waiting === 0) this.inFlight.delete(slot.call);
  }
}

function toBuffer(value: Buffer | string | null): Buffer | null {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

function sizeOf(value: Buffer | string | null): number {
  return value === null ? 0 : typeof value === 'string' ? Buffer.byteLength(value) : value.length;
}

function toHeaders(headers: ProducerRecord['headers']): MessageHeader[] | undefined {
  if (headers === undefined) return undefined;
  const out: MessageHeader[] = [];
  for (const [key, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const v of value) out.push({ [key]: v });
    else out.push({ [key]: value as string | Buffer });
  }
  return out;
}
