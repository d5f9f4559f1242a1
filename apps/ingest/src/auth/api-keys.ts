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
const ENTRY_FIELDS = new Set(['producer', 'key', 'contracts', 'envelopeProducers']);
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
    if (typeof e.key !== 'string' || !KEY_PATTERN.test(e.key)) {
      problems.push(`[${i}].key must be ${MIN_KEY_LENGTH} to ${MAX_KEY_LENGTH} visible ASCII characters (no spaces)`);
    } else if (seenKeys.has(e.key)) {
      problems.push(`[${i}].key is the key of [${String(seenKeys.get(e.key))}]: each producer needs its own`);
    } else {
      seenKeys.set(e.key, i);
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
  private readonly entries: { digest: Buffer; principal: Principal }[];

  constructor(keys: readonly ApiKeyEntry[]) {
    this.entries = keys.map((k) => {
      const all = k.contracts.includes('*');
      const allowed = new Set(k.contracts);
      const sendsAs = new Set(k.envelopeProducers ?? [k.producer]);
      const anyName = sendsAs.has('*');
      return {
        digest: sha256(k.key),
        principal: Object.freeze({
          producer: k.producer,
          mayUse: (c: string) => all || allowed.has(c),
          maySendAs: (p: string) => anyName || sendsAs.has(p),
        }),
      };
    });
  }

  /** The principal for an `Authorization` header value, or the reason it is refused. */
  authenticate(header: string | undefined): { ok: true; principal: Principal } | { ok: false; reason: string } {
    if (header === undefined || header.length === 0) return { ok: false, reason: 'missing Authorization header' };
    const match = BEARER.exec(header);
    if (!match) return { ok: false, reason: 'Authorization must be "Bearer <api key>"' };
    const digest = sha256(match[1]);
    let found: Principal | undefined;
    for (const entry of this.entries) {
      // No early exit: every key is compared so timing does not reveal the position of a match.
      if (timingSafeEqual(entry.digest, digest)) found = entry.principal;
    }
    return found ? { ok: true, principal: found } : { ok: false, reason: 'unknown API key' };
  }
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}
