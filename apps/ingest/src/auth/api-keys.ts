import { createHash, timingSafeEqual } from 'node:crypto';

/** One configured API key: the producer identity it stands for and the contracts it may send. */
export interface ApiKeyEntry {
  producer: string;
  key: string;
  /** Contract names, or ["*"] for every contract. */
  contracts: string[];
  /**
   * The values this key's events may carry in their envelope `producer` field; default
   * `[producer]`, `["*"]` for any (a gateway relaying for several systems). Bronze keeps the
   * envelope's producer, so without this bound any key could file events under another system.
   */
  envelopeProducers?: string[];
  /**
   * Keys this producer used before `key`, still accepted while it switches over: a rotation
   * without a window where neither works. At most {@link MAX_PREVIOUS_KEYS}; remove them once
   * ingest no longer logs their use.
   */
  previousKeys?: string[];
}

/** The authenticated caller of a request. */
export interface Principal {
  producer: string;
  mayUse(contract: string): boolean;
  /** Whether this key's events may name `producer` in their envelope (ApiKeyEntry.envelopeProducers). */
  maySendAs(producer: string): boolean;
}

const MIN_KEY_LENGTH = 24;
/** Longest key: what `authenticate` reads from `Authorization: Bearer …`. */
const MAX_KEY_LENGTH = 512;
/** A key is visible ASCII, as a bearer token in a header; one with a space or a longer one could never authenticate. */
const KEY_PATTERN = new RegExp(`^[\\x21-\\x7e]{${MIN_KEY_LENGTH},${MAX_KEY_LENGTH}}$`);
const BEARER = new RegExp(`^Bearer ([\\x21-\\x7e]{1,${MAX_KEY_LENGTH}})$`, 'i');
const ENTRY_FIELDS = new Set(['producer', 'key', 'contracts', 'envelopeProducers', 'previousKeys']);
/** Keys a producer may hold besides its current one, during a rotation. */
export const MAX_PREVIOUS_KEYS = 4;
const PRODUCER_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
/** Longest envelope producer name a key may list. */
const MAX_ENVELOPE_PRODUCER_CHARS = 256;

/** Config check for INGEST_API_KEYS; returns a message naming every problem, never a key. */
export function checkApiKeys(value: unknown): string | undefined {
  if (!Array.isArray(value) || value.length === 0) return 'must be a non-empty JSON array';
  const problems: string[] = [];
  const seenProducers = new Map<string, number>();
  /** Entry index by key: two entries with one key would authenticate as whichever came last. */
  const seenKeys = new Map<string, number>();
  value.forEach((entry: unknown, i) => {
    const e = entry as Partial<ApiKeyEntry> | null;
    if (!e || typeof e !== 'object' || Array.isArray(e)) return problems.push(`[${i}] must be an object`);
    const unknown = Object.keys(e).filter((k) => !ENTRY_FIELDS.has(k));
    // Entries by index only, nothing quoted from them: the messages are shown though the field is
    // secret, and a producer and a key swapped would put the key in a quoted name.
    if (unknown.length > 0) problems.push(`[${i}] has ${unknown.length} unknown field(s); the fields are ${[...ENTRY_FIELDS].join(', ')}`);
    if (typeof e.producer !== 'string' || !PRODUCER_PATTERN.test(e.producer)) problems.push(`[${i}].producer must match ${PRODUCER_PATTERN}`);
    else if (seenProducers.has(e.producer)) problems.push(`[${i}].producer is the producer of [${String(seenProducers.get(e.producer))}]`);
    else seenProducers.set(e.producer, i);
    const checkKey = (key: unknown, where: string) => {
      if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
        problems.push(`${where} must be ${MIN_KEY_LENGTH} to ${MAX_KEY_LENGTH} visible ASCII characters (no spaces)`);
      } else if (seenKeys.has(key)) {
        problems.push(`${where} is a key of [${String(seenKeys.get(key))}]: each producer needs its own`);
      } else {
        seenKeys.set(key, i);
      }
    };
    checkKey(e.key, `[${i}].key`);
    if (e.previousKeys !== undefined) {
      if (!Array.isArray(e.previousKeys) || e.previousKeys.length === 0 || e.previousKeys.length > MAX_PREVIOUS_KEYS) {
        problems.push(`[${i}].previousKeys must be an array of 1 to ${MAX_PREVIOUS_KEYS} keys`);
      } else {
        e.previousKeys.forEach((key: unknown, j) => checkKey(key, `[${i}].previousKeys[${j}]`));
      }
    }
    if (!Array.isArray(e.contracts) || e.contracts.length === 0 || !e.contracts.every((c) => typeof c === 'string' && c.length > 0)) {
      problems.push(`[${i}].contracts must be a non-empty array of contract names or ["*"]`);
    }
    const sendsAs = e.envelopeProducers;
    if (sendsAs !== undefined && (!Array.isArray(sendsAs) || sendsAs.length === 0 || !sendsAs.every((p) => typeof p === 'string' && p.length > 0 && p.length <= MAX_ENVELOPE_PRODUCER_CHARS))) {
      problems.push(`[${i}].envelopeProducers must be a non-empty array of names (1 to ${MAX_ENVELOPE_PRODUCER_CHARS} characters) or ["*"]`);
    }
    return undefined;
  });
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/**
 * Resolves bearer tokens to principals. Keys are kept only as SHA-256 digests and every lookup
 * compares against every digest with timingSafeEqual, so the time taken says nothing about
 * which key, or how much of one, matched.
 */
export class ApiKeyStore {
  private readonly entries: { digest: Buffer; principal: Principal; previous: boolean }[];

  constructor(keys: readonly ApiKeyEntry[]) {
    this.entries = keys.flatMap((k) => {
      const all = k.contracts.includes('*');
      const allowed = new Set(k.contracts);
      const sendsAs = new Set(k.envelopeProducers ?? [k.producer]);
      const anyName = sendsAs.has('*');
      const principal: Principal = Object.freeze({
        producer: k.producer,
        mayUse: (c: string) => all || allowed.has(c),
        maySendAs: (p: string) => anyName || sendsAs.has(p),
      });
      return [
        { digest: sha256(k.key), principal, previous: false },
        ...(k.previousKeys ?? []).map((key) => ({ digest: sha256(key), principal, previous: true })),
      ];
    });
  }

  /**
   * The principal for an `Authorization` header value, or the reason it is refused; `previousKey`
   * when the key is one of its producer's `previousKeys`.
   */
  authenticate(header: string | undefined): { ok: true; principal: Principal; previousKey: boolean } | { ok: false; reason: string } {
    if (header === undefined || header.length === 0) return { ok: false, reason: 'missing Authorization header' };
    const match = BEARER.exec(header);
    if (!match) return { ok: false, reason: 'Authorization must be "Bearer <api key>"' };
    const digest = sha256(match[1]);
    let found: (typeof this.entries)[number] | undefined;
    for (const entry of this.entries) {
      // No early exit: every key is compared so timing does not reveal the position of a match.
      if (timingSafeEqual(entry.digest, digest)) found = entry;
    }
    return found ? { ok: true, principal: found.principal, previousKey: found.previous } : { ok: false, reason: 'unknown API key' };
  }
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
