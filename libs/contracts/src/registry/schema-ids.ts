import { readFraming, type AvroDecoder } from '../avro/codec';
import { RegistryError, type RegistryClient } from './client';
import { learnSchemaId } from './contracts';

/** Answers that make an id unknown; any other failure (unreachable, unauthorized…) is thrown. */
const UNKNOWN_ID_CODES: ReadonlySet<string> = new Set(['REGISTRY_SCHEMA_NOT_FOUND', 'REGISTRY_SCHEMA_INVALID']);

/** Most ids remembered as unknown; beyond it the oldest is forgotten (and may be asked again). */
export const MAX_REMEMBERED_MISSES = 10_000;

/** Ids looked up at once: a batch that brings many new ids waits for a few round trips, not one per id. */
const LOOKUPS_AT_ONCE = 8;

/** Options of {@link SchemaIdLearner}. */
export interface SchemaIdLearnerOptions {
  /** How long an id the registry does not have is not asked for again, ms. Default 60 000. */
  readonly missTtlMs?: number;
  /**
   * After this many ids of one {@link SchemaIdLearner.prepare} call turned out unknown, the call
   * looks up no more (checked between rounds of lookups). Default 16; `Infinity` looks up every id.
   */
  readonly maxMisses?: number;
  /**
   * After this many ms of lookups in one call, the call throws a retryable REGISTRY_TIMEOUT
   * (checked between rounds; default Infinity). What it learned stays learned and its misses
   * stay remembered, so the caller's retry goes on where it stopped: a batch of thousands of
   * unknown ids against a slow registry is read in several tries, never in one that outlasts
   * the caller's own deadline (validate's Kafka transaction).
   */
  readonly budgetMs?: number;
  readonly now?: () => number;
}

/**
 * Keeps an AvroDecoder able to read Confluent-framed events (magic byte + 4-byte registry id).
 * Before a batch is decoded, {@link prepare} fetches from the registry the writer schema of each
 * schema id the decoder does not know yet and teaches it (`learnSchemaId`).
 *
 * - An id the registry does not have, or whose schema is no contract's, stays unknown: decoding
 *   reports AVRO_WRITER_UNKNOWN (a DLQ reason, an HTTP 4xx). It is not asked for again for
 *   `missTtlMs`, so a stream of bad ids does not become a stream of registry requests. At most
 *   {@link MAX_REMEMBERED_MISSES} such ids are remembered, so hostile ids cannot grow memory.
 * - That time starts when a call completes, not at the answer: a call that ran out of its budget
 *   (or met a failure) is retried by its caller with the same batch, and the ids it already found
 *   unknown stay unasked until a call completes. So a batch whose lookups take longer than
 *   `missTtlMs` in all (thousands of distinct hostile ids against a slow registry) still finishes,
 *   one budget at a time, instead of asking again for the ids its first tries found unknown. That
 *   holds for batches of up to {@link MAX_REMEMBERED_MISSES} distinct unknown ids; past it the
 *   oldest are forgotten as above.
 * - Ids are looked up {@link LOOKUPS_AT_ONCE} at a time. Ids the registry has cost nothing after
 *   their first lookup, so they are never capped: a batch that brings many new versions at once is
 *   read whole. Misses are: once `maxMisses` ids of a call were unknown (a hostile batch can carry
 *   thousands of distinct ids), the ids not looked up yet stay unknown for this batch, and are
 *   looked up by later calls. A caller that must never judge an event by a lookup it skipped (the
 *   raw topic's authority, validate) passes `Infinity`.
 * - Any other failure — the registry unreachable (retryable), refusing the credentials — throws
 *   its RegistryError: the caller retries the batch or answers 503. Events are never judged
 *   unknown because the registry was down or misconfigured.
 */
export class SchemaIdLearner {
  private readonly misses = new Map<number, number>();
  /** Ids found unknown by calls since the last one that completed; their TTL starts at the next completion. */
  private readonly unfinished = new Set<number>();
  private readonly missTtlMs: number;
  private readonly maxMisses: number;
  private readonly budgetMs: number;
  private readonly now: () => number;

  constructor(
    readonly decoder: AvroDecoder,
    private readonly client: RegistryClient,
    options: SchemaIdLearnerOptions = {},
  ) {
    this.missTtlMs = options.missTtlMs ?? 60_000;
    this.maxMisses = options.maxMisses ?? 16;
    this.budgetMs = options.budgetMs ?? Infinity;
    this.now = options.now ?? Date.now;
  }

  /** Teaches the decoder the unknown schema ids of `values` (see the class comment). */
  async prepare(values: Iterable<Uint8Array | null | undefined>): Promise<void> {
    const started = this.now();
    const wanted = [...this.unknownIds(values, started)];
    let misses = 0;
    for (let from = 0; from < wanted.length && misses < this.maxMisses; from += LOOKUPS_AT_ONCE) {
      if (this.now() - started >= this.budgetMs) {
        throw new RegistryError('REGISTRY_TIMEOUT', `looked up ${from} of ${wanted.length} unknown schema ids within ${this.budgetMs} ms; the rest on the next try`, { retryable: true });
      }
      const round = wanted.slice(from, from + LOOKUPS_AT_ONCE);
      const answers = await Promise.allSettled(round.map((id) => learnSchemaId(this.decoder, this.client, id)));
      // Every answer of the round is kept before a failure is thrown, so a retry asks none again.
      let failure: unknown;
      for (const [i, answer] of answers.entries()) {
        const id = round[i];
        if (answer.status === 'fulfilled') {
          this.misses.delete(id);
        } else if (answer.reason instanceof RegistryError && UNKNOWN_ID_CODES.has(answer.reason.code)) {
          this.unfinished.add(id);
          misses += 1;
        } else {
          failure ??= answer.reason;
        }
      }
      if (failure !== undefined) throw failure;
      if (this.unfinished.size > MAX_REMEMBERED_MISSES) this.startMissTtls();
    }
    this.startMissTtls();
  }

  /** The misses of the calls since the last completed one start their TTL now. */
  private startMissTtls(): void {
    const now = this.now();
    for (const id of this.unfinished) this.rememberMiss(id, now);
    this.unfinished.clear();
  }

  /** The Confluent schema ids in `values` that the decoder does not know and were not missed lately. */
  private unknownIds(values: Iterable<Uint8Array | null | undefined>, now: number): Set<number> {
    const ids = new Set<number>();
    for (const value of values) {
      if (value === null || value === undefined || value[0] !== 0x00) continue;
      const framing = readFraming(value);
      if (framing?.kind !== 'confluent' || this.decoder.knowsSchemaId(framing.schemaId)) continue;
      if ((this.misses.get(framing.schemaId) ?? 0) > now || this.unfinished.has(framing.schemaId)) continue;
      ids.add(framing.schemaId);
    }
    return ids;
  }

  private rememberMiss(id: number, now: number): void {
    this.misses.delete(id); // re-inserted last: the Map's order is the order to forget in
    this.misses.set(id, now + this.missTtlMs);
    if (this.misses.size > MAX_REMEMBERED_MISSES) this.misses.delete(this.misses.keys().next().value as number);
  }
}
