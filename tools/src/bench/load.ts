import { HEADERS } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import type { GeneratedEvent, Oracle } from '../generator';
import { sleep } from './stack';

/** Sends one batch of generated events until it is acknowledged; records acked events in the oracle. */
export interface Sender {
  send(batch: readonly GeneratedEvent[]): Promise<void>;
  close(): Promise<void>;
  /** Requests/batches retried after a retryable failure (429, 503, connection refused, Kafka error). */
  readonly retries: number;
  /** Disagreements with the generator (an invalid event accepted, a valid one rejected, a wrong reason). */
  readonly mismatches: string[];
}

interface IngestAnswer {
  accepted?: number;
  errors?: { index: number; code: string }[];
}

/**
 * Posts NDJSON batches to ingest. A 429/503 or a refused connection is retried (whole request,
 * after Retry-After) until `giveUpMs`: ingest acknowledges only what Kafka has, and event_id makes
 * a repeated event harmless downstream. Each event of a 200/207/422 answer is checked against the
 * generator: invalid ones must be rejected with their reason, valid ones accepted.
 */
export class HttpSender implements Sender {
  retries = 0;
  readonly mismatches: string[] = [];

  constructor(
    private readonly ingestUrl: () => string,
    private readonly apiKey: string,
    private readonly oracle: Oracle | undefined,
    private readonly giveUpMs = 300_000,
  ) {}

  async send(batch: readonly GeneratedEvent[]): Promise<void> {
    const body = batch.map((e) => e.body).join('\n') + '\n';
    const deadline = Date.now() + this.giveUpMs;
    for (;;) {
      let status = 0;
      let text = '';
      let retryAfterS = 0.2;
      try {
        const r = await fetch(`${this.ingestUrl()}/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.apiKey}`, 'content-type': 'application/x-ndjson' },
          body,
          signal: AbortSignal.timeout(60_000),
        });
        status = r.status;
        text = await r.text();
        retryAfterS = Number(r.headers.get('retry-after') ?? '0.2') || 0.2;
      } catch {
        status = 0; // refused or reset: the service is down or restarting
      }
      if (status === 200 || status === 207 || status === 422) {
        this.check(batch, status, text);
        return;
      }
      if (status !== 0 && status !== 429 && status !== 503) throw new Error(`ingest answered ${status}: ${text.slice(0, 500)}`);
      if (Date.now() > deadline) throw new Error(`ingest did not acknowledge a batch within ${this.giveUpMs} ms (last status ${status})`);
      this.retries++;
      await sleep(Math.min(2000, retryAfterS * 1000));
    }
  }

  private check(batch: readonly GeneratedEvent[], status: number, text: string): void {
    const answer = JSON.parse(text) as IngestAnswer & { error?: { details?: IngestAnswer } };
    const errors = answer.errors ?? answer.error?.details?.errors ?? [];
    const rejected = new Map(errors.map((e) => [e.index, e.code]));
    batch.forEach((ev, i) => {
      const code = rejected.get(i);
      if (ev.kind === 'invalid') {
        if (code !== ev.reason && this.mismatches.length < 100) this.mismatches.push(`${ev.eventId}: want rejection ${ev.reason}, got ${code ?? 'accepted'}`);
      } else if (code !== undefined && this.mismatches.length < 100) {
        this.mismatches.push(`${ev.eventId}: valid event rejected with ${code} (HTTP ${status})`);
      }
      if (code === undefined || ev.kind === 'invalid') this.oracle?.add(ev, 'http');
    });
  }

  async close(): Promise<void> {}
}

/** Settings of a {@link RawSender}. */
export interface RawSenderOptions {
  /** How long the sender retries one batch before it fails, ms (default 300 000). */
  readonly giveUpMs?: number;
  /** librdkafka's message timeout: one attempt of a batch fails after this long, ms (default 120 000). */
  readonly deliveryTimeoutMs?: number;
}

/** A producer of the sender's and its connection, made together. */
interface RawClient {
  readonly producer: KafkaProducer;
  readonly connected: Promise<void>;
}

/**
 * Produces events straight into the raw topic with the idempotent producer (as a producer that
 * bypasses ingest would), keyed by entity key. A failed batch is re-sent whole, on a new producer:
 * after a broker restart librdkafka's idempotent producer has been seen never to deliver again
 * while a new one delivered at once (ingest exits for a new producer on the same signs). The old
 * producer is closed in the background; what it still delivers repeats event_ids, which the
 * pipeline lands once.
 */
export class RawSender implements Sender {
  retries = 0;
  /** Producers replaced after a failed batch. */
  replaced = 0;
  readonly mismatches: string[] = [];
  /**
   * Where each invalid event was delivered (`topic/partition/offset`, by event_id): its dead
   * letter must name that record as its source. A batch sent again after a failure records the
   * attempt that was acknowledged (an earlier one may have landed too).
   */
  readonly invalidSources = new Map<string, string>();
  private client: RawClient | undefined;
  private readonly giveUpMs: number;
  private readonly deliveryTimeoutMs: number;
  private readonly retiring = new Set<Promise<void>>();

  constructor(
    private readonly brokers: string,
    private readonly topic: string,
    private readonly oracle: Oracle | undefined,
    options: RawSenderOptions = {},
  ) {
    this.giveUpMs = options.giveUpMs ?? 300_000;
    this.deliveryTimeoutMs = options.deliveryTimeoutMs ?? 120_000;
  }

  async send(batch: readonly GeneratedEvent[]): Promise<void> {
    const deadline = Date.now() + this.giveUpMs;
    for (;;) {
      const client = this.current();
      try {
        await client.connected;
        const reports = await client.producer.sendBatch(batch.map((e) => ({ topic: this.topic, key: e.key, value: e.body, headers: { [HEADERS.producer]: 'bench-raw' } })));
        batch.forEach((e, i) => {
          this.oracle?.add(e, 'raw');
          if (e.kind === 'invalid') this.invalidSources.set(e.eventId, `${reports[i].topic}/${reports[i].partition}/${reports[i].offset}`);
        });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the raw producer did not deliver a batch within ${this.giveUpMs} ms: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        this.retries++;
        this.replace(client);
        await sleep(500);
      }
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client.connected.then(() => client.producer.close(), () => undefined);
    await Promise.all(this.retiring);
  }

  private current(): RawClient {
    if (!this.client) {
      const producer = new KafkaProducer({ brokers: this.brokers, clientId: 'sluice-bench-raw', deliveryTimeoutMs: this.deliveryTimeoutMs, lingerMs: 10 });
      this.client = { producer, connected: producer.connect(60_000) };
    }
    return this.client;
  }

  /** Drops `failed` for a new producer at the next send, unless a concurrent send did already. */
  private replace(failed: RawClient): void {
    if (this.client !== failed) return;
    this.client = undefined;
    this.replaced++;
    const closing = failed.connected
      .then(() => failed.producer.close(5_000), () => undefined)
      .catch(() => undefined)
      .finally(() => this.retiring.delete(closing));
    this.retiring.add(closing);
  }
}

/** Options of {@link driveLoad}. */
export interface LoadOptions {
  readonly next: () => GeneratedEvent;
  readonly sender: Sender;
  /** Target events/s (0 = as fast as the pipeline accepts). */
  readonly rate: number;
  readonly durationMs: number;
  readonly batchSize: number;
  /** Batches in flight at once. */
  readonly concurrency: number;
  /** Called after every acknowledged batch (time of the send, the batch). */
  readonly onAcked?: (sentAtMs: number, batch: readonly GeneratedEvent[]) => void;
  readonly signal?: AbortSignal;
}

/**
 * Sends batches for `durationMs` at `rate` events/s (paced per batch), `concurrency` in flight;
 * resolves when every batch sent is acknowledged. Returns events acknowledged.
 */
export async function driveLoad(o: LoadOptions): Promise<number> {
  const start = Date.now();
  let sent = 0;
  let acked = 0;
  let failure: unknown;
  const inFlight = new Set<Promise<void>>();
  while (Date.now() - start < o.durationMs && !o.signal?.aborted && failure === undefined) {
    if (o.rate > 0) {
      const due = start + (sent / o.rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
    }
    while (inFlight.size >= o.concurrency) await Promise.race(inFlight);
    const batch: GeneratedEvent[] = [];
    for (let i = 0; i < o.batchSize; i++) batch.push(o.next());
    sent += batch.length;
    const at = Date.now();
    const p = o.sender
      .send(batch)
      .then(() => {
        acked += batch.length;
        o.onAcked?.(at, batch);
      })
      .catch((err) => {
        failure ??= err;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  if (failure !== undefined) throw failure;
  return acked;
}
