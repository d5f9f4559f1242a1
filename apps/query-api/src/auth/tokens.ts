import { createHash, timingSafeEqual } from 'node:crypto';
import { queryError } from '../errors';

/** A configured bearer token and the tables it may read (`*` = every table). */
export interface TokenGrant {
  token: string;
  /** A name for logs; never the token itself. */
  name: string;
  tables: string[];
}

/** Longest token `authenticate` reads from `Authorization: Bearer …`; the config check refuses longer ones. */
export const MAX_TOKEN_LENGTH = 512;
const BEARER = new RegExp(`^Bearer ([\\x21-\\x7e]{1,${MAX_TOKEN_LENGTH}})$`, 'i');

/** Who made a request, once authenticated. */
export interface Principal {
  name: string;
  canRead(table: string): boolean;
}

/**
 * Checks bearer tokens against the configured grants. Tokens are compared as SHA-256 digests
 * with `timingSafeEqual`, and every grant is compared on every request, so timing reveals neither
 * a token's length nor which grant nearly matched.
 */
export class TokenAuth {
  private readonly grants: { digest: Buffer; name: string; tables: Set<string> }[];

  constructor(grants: readonly TokenGrant[]) {
    this.grants = grants.map((g) => ({ digest: digest(g.token), name: g.name, tables: new Set(g.tables) }));
  }

  /** The principal for an `Authorization` header value; throws QUERY_AUTH_MISSING or QUERY_AUTH_INVALID. */
  authenticate(header: string | undefined): Principal {
    if (header === undefined || header === '') throw queryError('QUERY_AUTH_MISSING');
    const m = BEARER.exec(header);
    if (!m) throw queryError('QUERY_AUTH_INVALID', 'expected "Authorization: Bearer <token>"');
    const presented = digest(m[1]);
    let found: (typeof this.grants)[number] | undefined;
    for (const g of this.grants) {
      if (timingSafeEqual(g.digest, presented) && !found) found = g;
    }
    if (!found) throw queryError('QUERY_AUTH_INVALID');
    const { name, tables } = found;
    return { name, canRead: (table) => tables.has('*') || tables.has(table) };
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
