/**
 * The client side of SCRAM (RFC 5802, with SHA-256 per RFC 7677 and SHA-512 as Kafka uses it):
 * builds the two client messages and checks the server's proof, so a broker that does not know
 * the password cannot pass as the real one. Pure functions of their inputs; the exchange itself
 * runs in connection.ts. The password goes in as its UTF-8 bytes, unnormalised, as Kafka's own
 * ScramFormatter and librdkafka do (SASLprep would derive another key for some non-ASCII passwords).
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

/** Kafka's smallest accepted iteration count; a server asking for fewer is refused. */
const MIN_ITERATIONS = 4096;
/** Kafka's largest (it refuses credentials with more); bounds the CPU a hostile server can make us spend. */
const MAX_ITERATIONS = 16_384;

const derive = promisify(pbkdf2);

type Hash = 'sha256' | 'sha512';

/** The hash of a Kafka SCRAM mechanism name. */
export function scramHash(mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512'): Hash {
  return mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512';
}

/** One SCRAM exchange of one client. */
export interface ScramClient {
  /** The client-first message (`n,,n=<user>,r=<nonce>`). */
  readonly first: string;
  /** The client-final message for the server-first message; rejects a malformed or unsafe one. The key derivation runs off the event loop. */
  final(serverFirst: string): Promise<string>;
  /** Checks the server-final message; throws when it carries an error or a wrong signature. */
  verify(serverFinal: string): void;
}

/** `=` and `,` escaped as SCRAM's saslname wants. */
function saslName(username: string): string {
  return username.replace(/=/g, '=3D').replace(/,/g, '=2C');
}

function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) out.set(part[0], part.slice(2));
  }
  return out;
}

function hmac(hash: Hash, key: Buffer, text: string): Buffer {
  return createHmac(hash, key).update(text, 'utf8').digest();
}

/** Starts an exchange; `nonce` only for tests (default 24 random bytes, base64). */
export function scramClient(hash: Hash, username: string, password: string, nonce = randomBytes(24).toString('base64')): ScramClient {
  const firstBare = `n=${saslName(username)},r=${nonce}`;
  let authMessage = '';
  let saltedPassword: Buffer | undefined;
  return {
    first: `n,,${firstBare}`,
    async final(serverFirst: string): Promise<string> {
      const attrs = attributes(serverFirst);
      if (attrs.has('e')) throw new Error(`SCRAM server error: ${attrs.get('e')}`);
      const serverNonce = attrs.get('r') ?? '';
      const salt = Buffer.from(attrs.get('s') ?? '', 'base64');
      const iterations = Number(attrs.get('i'));
      if (!serverNonce.startsWith(nonce) || serverNonce.length === nonce.length) throw new Error('SCRAM server nonce does not extend the client nonce');
      if (salt.length === 0) throw new Error('SCRAM server sent no salt');
      if (!Number.isInteger(iterations) || iterations < MIN_ITERATIONS || iterations > MAX_ITERATIONS) {
        throw new Error(`SCRAM iteration count ${attrs.get('i')} outside Kafka's ${MIN_ITERATIONS}..${MAX_ITERATIONS}`);
      }
      saltedPassword = await derive(Buffer.from(password, 'utf8'), salt, iterations, createHash(hash).digest().length, hash);
      const finalBare = `c=biws,r=${serverNonce}`; // biws = base64("n,,"): no channel binding
      authMessage = `${firstBare},${serverFirst},${finalBare}`;
      const clientKey = hmac(hash, saltedPassword, 'Client Key');
      const storedKey = createHash(hash).update(clientKey).digest();
      const signature = hmac(hash, storedKey, authMessage);
      const proof = Buffer.alloc(clientKey.length);
      for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i] ^ signature[i];
      return `${finalBare},p=${proof.toString('base64')}`;
    },
    verify(serverFinal: string): void {
      if (saltedPassword === undefined) throw new Error('SCRAM server-final before server-first');
      const attrs = attributes(serverFinal);
      if (attrs.has('e')) throw new Error(`SCRAM server error: ${attrs.get('e')}`);
      const got = Buffer.from(attrs.get('v') ?? '', 'base64');
      const want = hmac(hash, hmac(hash, saltedPassword, 'Server Key'), authMessage);
      if (got.length !== want.length || !timingSafeEqual(got, want)) throw new Error('SCRAM server signature does not match: the server does not know the password');
    },
  };
}
