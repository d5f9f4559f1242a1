import { readFraming, type AvroDecoder } from '../avro/codec';
import { RegistryError, type RegistryClient } from './client';
import { learnSchemaId } from './contracts';

/** Answers that make an id unknown; any other failure (unreachable, unauthorized…) is thrown. */
const UNKNOWN_ID_CODES: ReadonlySet<string> = new Set(['REGISTRY_SCHEMA_NOT_FOUND', 'REGISTRY_SCHEMA_INVALID']);

/** Most ids remembered as unknown; beyond it the oldest is forgotten (and may be asked again). */
export const MAX_REMEMBERED_MISSES = 10_000;

/** Options of {@link SchemaIdLearner}. */
export interface SchemaIdLearnerOptions {
  /** How long an id the registry does not have is not asked for again, ms. Default 60 000. */
  readonly missTtlMs?: number;
  /** Most unknown ids looked up per {@link SchemaIdLearner.prepare} call. Default 16. */
  readonly maxLookups?: number;
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
 * - At most `maxLookups` unknown ids are looked up per call (a hostile batch can carry thousands
 *   of distinct ids); the rest stay unknown for this batch, and are looked up by later calls.
 * - Any other failure — the registry unreachable (retryable), refusing the credentials — throws
 *   its RegistryError: the caller retries the batch or answers 503. Events are never judged
 *   unknown because the registry was down or misconfigured.
 */
export class SchemaIdLearner {
  private readonly misses = new Map<number, number>();
  private readonly missTtlMs: number;
  private readonly maxLookups: number;
  private readonly now: () => number;

  constructor(
    readonly decoder: AvroDecoder,
    private readonly client: RegistryClient,
    options: SchemaIdLearnerOptions = {},
  ) {
    this.missTtlMs = options.missTtlMs ?? 60_000;
    this.maxLookups = options.maxLookups ?? 16;
    this.now = options.now ?? Date.now;
  }

  /** Teaches the decoder the unknown schema ids of `values` (see the class comment). */
  async prepare(values: Iterable<Uint8Array | null | undefined>): Promise<void> {
    const now = this.now();
    const wanted = new Set<number>();
    for (const value of values) {
      if (value === null || value === undefined || value[0] !== 0x00) continue;
      const framing = readFraming(value);
      if (framing?.kind !== 'confluent' || this.decoder.knowsSchemaId(framing.schemaId)) continue;
      if ((this.misses.get(framing.schemaId) ?? 0) > now) continue;
      wanted.add(framing.schemaId);
      if (wanted.size === this.maxLookups) break;
    }
    for (const id of wanted) {
      try {
        await learnSchemaId(this.decoder, this.client, id);
        this.misses.delete(id);
      } catch (err) {
        if (!(err instanceof RegistryError) || !UNKNOWN_ID_CODES.has(err.code)) throw err;
        this.misses.delete(id); // re-inserted last: the Map's order is the order to forget in
        this.misses.set(id, now + this.missTtlMs);
        if (this.misses.size > MAX_REMEMBERED_MISSES) this.misses.delete(this.misses.keys().next().value as number);
      }
    }
  }
}
