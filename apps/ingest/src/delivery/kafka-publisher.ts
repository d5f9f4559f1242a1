import type { EventPublisher, RawRecord } from './publisher';

/** The part of @sluice/kafka's KafkaProducer ingest uses (structural, so tests can see the seam). */
export interface ProducerPort {
  hasCapacity(count: number): boolean;
  sendBatch(records: readonly { topic: string; key: string; value: Buffer; headers: Record<string, string>; timestamp?: number }[]): Promise<unknown>;
}

/** Settings of {@link KafkaPublisher}. */
export interface KafkaPublisherOptions {
  /**
   * Checks the broker answers (a metadata request); rejects when it does not. Resolves with the
   * raw topic's partitions that have no leader (none: `[]` or nothing).
   */
  probe: () => Promise<{ leaderlessPartitions: readonly number[] } | void>;
  /** Time between probes, ms. */
  probeIntervalMs: number;
  onAvailabilityChange?: (available: boolean, reason: string) => void;
  /**
   * Deliveries failing for this long (no success, no failed probe and no quiet spell of half
   * this in between) while the broker answers probes mean a wedged producer, not an outage:
   * `isLive()` turns false.
   */
  wedgeAfterMs: number;
  now?: () => number;
}

// Errors that say "the broker is not there", as opposed to "this request was bad".
const DOWN_CODES = new Set(['KAFKA_BROKER_UNREACHABLE', 'KAFKA_TIMEOUT', 'KAFKA_BROKER_UNAVAILABLE', 'KAFKA_NOT_CONNECTED']);

/**
 * EventPublisher over the idempotent producer, plus a broker availability flag: a periodic
 * metadata probe and failed deliveries turn it off, the next successful probe turns it back on.
 * While off, ingest answers 503 before reading request bodies instead of queueing events that
 * would only time out.
 */
export class KafkaPublisher implements EventPublisher {
  private available = true;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  /** The last probe found the broker, with a leader for every partition of the raw topic. */
  private answering = false;
  /** The last probe found partitions without a leader (reported once per spell). */
  private partialOutage = false;
  /** First of an unbroken run of failed deliveries while the broker answers (undefined: none). */
  private wedgeSince: number | undefined;
  private lastFailureAt = 0;
  /** The producer failed with a fatal error (KAFKA_FATAL): it never delivers again. */
  private fatal = false;
  private readonly now: () => number;

  constructor(
    private readonly producer: ProducerPort,
    private readonly options: KafkaPublisherOptions,
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Starts the periodic probe. */
  start(): void {
    this.timer = setInterval(() => void this.runProbe(), this.options.probeIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  isAvailable(): boolean {
    return this.available;
  }

  hasCapacity(count: number): boolean {
    return this.producer.hasCapacity(count);
  }

  /**
   * False once the producer looks wedged: deliveries kept failing as if the broker were down for
   * `wedgeAfterMs` while every probe found it answering. Seen after a broker restart (librdkafka
   * never delivered again; a new producer did at once). Only a restart recovers, so /healthz
   * fails and the process exits. During an outage the probes fail too, which restarts the clock:
   * ingest stays up answering 503. A fatal producer error (e.g. the idempotent producer's
   * sequence lost) is not live at once: librdkafka refuses every later produce, whatever the
   * broker does, so ingest would answer 503 forever while its probes stayed green.
   */
  isLive(): boolean {
    if (this.fatal) return false;
    return this.wedgeSince === undefined || this.lastFailureAt - this.wedgeSince < this.options.wedgeAfterMs;
  }

  async publish(topic: string, records: RawRecord[]): Promise<void> {
    try {
      await this.producer.sendBatch(records.map((r) => ({ topic, key: r.key, value: r.value, headers: r.headers })));
      this.wedgeSince = undefined;
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (code === 'KAFKA_FATAL') this.fatal = true;
      if (DOWN_CODES.has(code)) {
        const now = this.now();
        // A run of failures breaks on a quiet spell (no traffic is no evidence) and starts only
        // while the broker answers; a failure during an outage is just the outage.
        if (!this.answering) this.wedgeSince = undefined;
        else if (this.wedgeSince === undefined || now - this.lastFailureAt > this.options.wedgeAfterMs / 2) this.wedgeSince = now;
        this.lastFailureAt = now;
        // With a raw partition known to have no leader, a failed delivery is that partition's:
        // the broker is there, and requests for the other partitions still land (the probe
        // turns availability off when the broker itself stops answering).
        if (!this.partialOutage) this.setAvailable(false, code);
      }
      throw err;
    }
  }

  private async runProbe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      const leaderless = (await this.options.probe())?.leaderlessPartitions ?? [];
      // A partition without a leader fails the deliveries that touch it, as an outage does,
      // while the broker answers: not evidence of a wedged producer (a restart would not help,
      // and the pod crash-looped). Requests stay accepted: those touching other partitions land.
      this.answering = leaderless.length === 0;
      if (!this.answering) this.wedgeSince = undefined;
      if (leaderless.length > 0 && !this.partialOutage) this.options.onAvailabilityChange?.(true, `raw partitions without a leader: ${leaderless.join(',')}`);
      this.partialOutage = leaderless.length > 0;
      this.setAvailable(true, 'probe answered');
    } catch (err) {
      this.answering = false;
      this.wedgeSince = undefined;
      this.setAvailable(false, (err as { code?: string }).code ?? 'probe failed');
    } finally {
      this.probing = false;
    }
  }

  private setAvailable(available: boolean, reason: string): void {
    if (available === this.available) return;
    this.available = available;
    this.options.onAvailabilityChange?.(available, reason);
  }
}
