/** Why consumption is paused, or `flowing`. */
export type FlowState = 'flowing' | 'paused-memory' | 'paused-storage';

/** Options of {@link BackpressureController}. */
export interface BackpressureOptions {
  /** Pause fetching when this many bytes are buffered (batch being filled + batch being written). */
  readonly maxBufferedBytes: number;
  /** Resume when buffered bytes fall to this fraction of the maximum (hysteresis); default 0.5. */
  readonly resumeFraction?: number;
}

/**
 * Decides when the tier-1 consumer pauses its partitions. Two causes:
 * - memory: buffered bytes reached the maximum (storage slower than Kafka);
 * - storage: the last write failed and is being retried with backoff.
 * Pausing leaves records in Kafka, so memory stays bounded and lag grows instead; nothing is
 * dropped. Resuming needs both causes cleared, with hysteresis so the consumer does not flap.
 */
export class BackpressureController {
  private buffered = 0;
  private storageFailing = false;
  private current: FlowState = 'flowing';
  private readonly resumeBelow: number;

  constructor(private readonly options: BackpressureOptions) {
    this.resumeBelow = options.maxBufferedBytes * (options.resumeFraction ?? 0.5);
  }

  /** The state after the last update. */
  get state(): FlowState {
    return this.current;
  }

  /** Bytes currently buffered, as last reported. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Reports buffered bytes; returns the new state. */
  setBuffered(bytes: number): FlowState {
    this.buffered = bytes;
    return this.evaluate();
  }

  /** Reports a failed storage write (paused until {@link storageRecovered}). */
  storageFailed(): FlowState {
    this.storageFailing = true;
    return this.evaluate();
  }

  /** Reports a successful storage write. */
  storageRecovered(): FlowState {
    this.storageFailing = false;
    return this.evaluate();
  }

  /** True when fetching should stop. */
  get paused(): boolean {
    return this.current !== 'flowing';
  }

  private evaluate(): FlowState {
    if (this.storageFailing) this.current = 'paused-storage';
    else if (this.buffered >= this.options.maxBufferedBytes) this.current = 'paused-memory';
    else if (this.current === 'flowing' || this.buffered <= this.resumeBelow) this.current = 'flowing';
    else this.current = 'paused-memory';
    return this.current;
  }
}
