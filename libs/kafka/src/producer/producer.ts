import { Producer, type DeliveryReport as NativeReport, type LibrdKafkaError, type MessageHeader } from '@confluentinc/kafka-javascript';
import { KAFKA_CHANNELS, publish } from '../channels';
import { baseProperties, callback, type RdkafkaProperties } from '../connection';
import { kafkaError, translateKafkaError, type KafkaError } from '../errors';
import { PRODUCER_DEFAULTS, type ProducerOptions } from './options';
import type { DeliveryReport, ProducerRecord, SendOutcome, SendSuccess } from './types';

interface Pending {
  resolve: (report: DeliveryReport) => void;
  reject: (err: KafkaError) => void;
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
  dr_cb: true,
});

/**
 * Idempotent producer (acks=all). `send`/`sendBatch` resolve only once the broker acknowledged
 * every message (delivery reports); they fail fast with KAFKA_QUEUE_FULL when the local queue
 * is full, so callers can shed load (HTTP 429) instead of buffering without bound.
 */
export class KafkaProducer {
  /** Client id used in events. */
  readonly clientId: string;
  /** Messages this producer may hold awaiting delivery reports (`maxQueueMessages`). */
  readonly queueCapacity: number;
  protected readonly native: Producer;
  private readonly pending = new Set<Pending>();
  private connected = false;
  private closing: Promise<void> | undefined;

  /** `extra`: librdkafka properties a subclass adds (e.g. `transactional.id`); the invariants still win. */
  constructor(options: ProducerOptions, extra: RdkafkaProperties = {}) {
    this.clientId = options.clientId ?? 'sluice';
    this.queueCapacity = options.maxQueueMessages ?? PRODUCER_DEFAULTS.maxQueueMessages;
    this.native = new Producer({ ...producerProperties(options), ...extra, ...PRODUCER_INVARIANTS } as never);
    this.native.on('delivery-report', (err, report) => this.onDelivery(err, report));
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
      throw translateKafkaError(err, { operation: 'producer.connect' });
    }
    // Delivery reports are served by librdkafka's background thread: no JS timer to poll.
    this.native.setPollInBackground(true);
    this.connected = true;
  }

  /** Messages handed to librdkafka whose delivery report has not arrived yet. */
  get queueDepth(): number {
    return this.pending.size;
  }

  /** True when `count` more messages fit under {@link queueCapacity}: check before accepting work. */
  hasCapacity(count = 1): boolean {
    return this.pending.size + count <= this.queueCapacity;
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
    const deliveries: Array<Promise<DeliveryReport>> = [];
    let bytes = 0;
    let enqueueError: KafkaError | undefined;
    for (const record of records) {
      try {
        deliveries.push(this.enqueue(record));
        bytes += sizeOf(record.value);
      } catch (err) {
        enqueueError = translateKafkaError(err, { operation: 'produce', topic: record.topic });
        break;
      }
    }
    const settled = await Promise.allSettled(deliveries);
    const failures = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    const firstError = enqueueError ?? (failures[0]?.reason as KafkaError | undefined);
    const delivered = settled.length - failures.length;
    if (firstError !== undefined) {
      publish(KAFKA_CHANNELS.produceFailed, { clientId: this.clientId, count: records.length, failed: records.length - delivered, code: firstError.code });
    } else {
      publish(KAFKA_CHANNELS.produceAcked, { clientId: this.clientId, count: records.length, bytes, latencyMs: performance.now() - started });
    }
    const outcomes: SendOutcome[] = records.map((_, i) => {
      const s = settled[i];
      if (s === undefined) return { ok: false, error: enqueueError as KafkaError };
      return s.status === 'fulfilled' ? { ok: true, report: s.value } : { ok: false, error: s.reason as KafkaError };
    });
    return { outcomes, firstError, delivered, failed: failures.length, notSent: records.length - deliveries.length };
  }

  /** Waits until every queued message got its delivery report (or the timeout passed). */
  async flush(timeoutMs = 30_000): Promise<void> {
    if (!this.connected) return;
    try {
      await callback((done) => this.native.flush(timeoutMs, (err) => done(err)));
    } catch (err) {
      throw translateKafkaError(err, { operation: 'producer.flush' });
    }
  }

  /**
   * Flushes (up to `timeoutMs`), then disconnects. Messages still unacknowledged fail with
   * KAFKA_NOT_CONNECTED so no caller waits forever. Idempotent.
   */
  close(timeoutMs = 30_000): Promise<void> {
    this.closing ??= this.doClose(timeoutMs);
    return this.closing;
  }

  private async doClose(timeoutMs: number): Promise<void> {
    if (!this.connected) return;
    await this.flush(timeoutMs).catch(() => undefined);
    this.connected = false;
    await callback((done) => this.native.disconnect(timeoutMs, (err) => done(err))).catch(() => undefined);
    const left = [...this.pending];
    this.pending.clear();
    for (const p of left) p.reject(kafkaError('KAFKA_NOT_CONNECTED', 'produce: producer closed before the broker acknowledged the message'));
  }

  private enqueue(record: ProducerRecord): Promise<DeliveryReport> {
    let opaque: Pending | undefined;
    const delivered = new Promise<DeliveryReport>((resolve, reject) => {
      opaque = { resolve, reject };
    });
    // produce() throws synchronously on a full queue or a bad argument (nothing was enqueued):
    // it is called outside the promise executor so that the throw reaches sendBatch.
    this.native.produce(
      record.topic,
      record.partition ?? -1,
      toBuffer(record.value),
      record.key ?? null,
      record.timestamp ?? null,
      opaque,
      toHeaders(record.headers),
    );
    this.pending.add(opaque as Pending);
    return delivered;
  }

  private onDelivery(err: LibrdKafkaError | null | undefined, report: NativeReport): void {
    const opaque = report.opaque as Pending | undefined;
    if (opaque === undefined || !this.pending.delete(opaque)) return;
    if (err) opaque.reject(translateKafkaError(err, { operation: 'produce', topic: report.topic }));
    else opaque.resolve({ topic: report.topic, partition: report.partition, offset: report.offset, timestamp: report.timestamp });
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
  return Object.entries(headers).map(([key, value]) => ({ [key]: value }));
}
