import { loadConfig } from '@sluice/config';
import { ingestConfigSchema } from '../config';
import { ApiKeyStore, checkApiKeys } from './api-keys';

const keys = [
  { producer: 'shop', key: 'shop-key-0123456789abcdefghij', contracts: ['orders'] },
  { producer: 'ops', key: 'ops-key-0123456789abcdefghijkl', contracts: ['*'] },
];

describe('ApiKeyStore', () => {
  const store = new ApiKeyStore(keys);

  it('resolves a bearer key to its producer and scopes', () => {
    const r = store.authenticate('Bearer shop-key-0123456789abcdefghij');
    expect(r.ok && r.principal.producer).toBe('shop');
    expect(r.ok && [r.principal.mayUse('orders'), r.principal.mayUse('inventory')]).toEqual([true, false]);
    const all = store.authenticate('bearer ops-key-0123456789abcdefghijkl');
    expect(all.ok && all.principal.mayUse('anything')).toBe(true);
  });

  it('lets a key send as its own producer only, unless it lists others', () => {
    const own = store.authenticate('Bearer shop-key-0123456789abcdefghij');
    expect(own.ok && ['shop', 'ops', 'Shop', ''].map((p) => own.principal.maySendAs(p))).toEqual([true, false, false, false]);
    const listed = new ApiKeyStore([{ ...keys[0], envelopeProducers: ['shop-web', 'shop-app'] }]).authenticate('Bearer shop-key-0123456789abcdefghij');
    expect(listed.ok && ['shop-web', 'shop-app', 'shop', '*'].map((p) => listed.principal.maySendAs(p))).toEqual([true, true, false, false]);
    const any = new ApiKeyStore([{ ...keys[0], envelopeProducers: ['*'] }]).authenticate('Bearer shop-key-0123456789abcdefghij');
    expect(any.ok && any.principal.maySendAs('whoever')).toBe(true);
  });

  it.each([
    [undefined, 'missing Authorization header'],
    ['', 'missing Authorization header'],
    ['Token shop-key-0123456789abcdefghij', 'Authorization must be "Bearer <api key>"'],
    ['Bearer  shop-key-0123456789abcdefghij', 'Authorization must be "Bearer <api key>"'],
    ['Bearer shop-key-0123456789abcdefghi', 'unknown API key'],
    ['Bearer SHOP-KEY-0123456789ABCDEFGHIJ', 'unknown API key'],
  ])('refuses %j: %s', (header, reason) => {
    expect(store.authenticate(header)).toEqual({ ok: false, reason });
  });
});

describe('INGEST_API_KEYS', () => {
  it('names every problem at once and never echoes a key', () => {
    const bad = [{ producer: 'a b', key: 'short-secret', contracts: [] }, { producer: 'ok', key: 'x'.repeat(30), contracts: ['orders'] }, { producer: 'ok', key: 'y'.repeat(30), contracts: ['orders'] }, 7];
    const problem = checkApiKeys(bad) ?? '';
    expect(problem).toContain('[0].producer must match');
    expect(problem).toContain('[0].key must be 24 to 512 visible ASCII characters');
    expect(problem).toContain('[0].contracts must be a non-empty array');
    expect(problem).toContain('[2].producer is the producer of [1]');
    expect(problem).toContain('[3] must be an object');
    expect(problem).not.toContain('short-secret');
    expect(checkApiKeys([])).toBe('must be a non-empty JSON array');
    for (const envelopeProducers of [[], 'shop', [''], ['x'.repeat(257)], [7]]) {
      expect(checkApiKeys([{ producer: 'p', key: 'z'.repeat(30), contracts: ['*'], envelopeProducers }])).toContain('[0].envelopeProducers must be a non-empty array');
    }
    expect(checkApiKeys([{ producer: 'p', key: 'z'.repeat(30), contracts: ['*'], envelopeProducers: ['shop web/ä', '*'] }])).toBeUndefined();
    expect(checkApiKeys(keys)).toBeUndefined();
  });

  it('refuses keys that could never authenticate, one key for two producers, and misspelt fields', () => {
    const entry = (producer: string, key: string, extra: object = {}) => ({ producer, key, contracts: ['*'], ...extra });
    const spaced = `shop key ${'x'.repeat(30)}`;
    const long = 'y'.repeat(513);
    const shared = 'shared-key-0123456789abcdefgh';
    const problem =
      checkApiKeys([entry('a', spaced), entry('b', long), entry('c', shared), entry('d', shared), entry('e', 'e'.repeat(30), { envelopeProducer: ['*'] })]) ?? '';
    expect(problem).toContain('[0].key must be 24 to 512 visible ASCII characters');
    expect(problem).toContain('[1].key must be 24 to 512 visible ASCII characters');
    expect(problem).toContain('[3].key is a key of [2]');
    expect(problem).toContain('[4] has 1 unknown field(s); the fields are ');
    for (const secret of [spaced, long, shared]) expect(problem).not.toContain(secret);
    // The longest key that passes the check authenticates.
    const longest = 'k'.repeat(512);
    expect(checkApiKeys([entry('p', longest)])).toBeUndefined();
    expect(new ApiKeyStore([entry('p', longest)]).authenticate(`Bearer ${longest}`).ok).toBe(true);
  });

  it('takes previous keys for a rotation, each unique among all keys and as strict as a key', () => {
    const entry = (producer: string, key: string, previousKeys?: unknown) => ({ producer, key, contracts: ['*'], previousKeys });
    const a = 'a-key-0123456789abcdefghijklmn';
    const b = 'b-key-0123456789abcdefghijklmn';
    const old = 'old-key-0123456789abcdefghijkl';
    expect(checkApiKeys([entry('a', a, [old]), { producer: 'b', key: b, contracts: ['*'] }])).toBeUndefined();
    const problem = checkApiKeys([entry('a', a, [old, 'short']), entry('b', b, [a]), entry('c', 'c'.repeat(30), []), entry('d', 'd'.repeat(30), 'x'), entry('e', 'e'.repeat(30), ['1', '2', '3', '4', '5'].map((n) => n.repeat(30)))]) ?? '';
    expect(problem).toContain('[0].previousKeys[1] must be 24 to 512 visible ASCII characters');
    expect(problem).toContain('[1].previousKeys[0] is a key of [0]');
    for (const i of [2, 3, 4]) expect(problem).toContain(`[${i}].previousKeys must be an array of 1 to 4 keys`);
    expect(problem).not.toContain(old);
    expect(problem).not.toContain(a);

    const store = new ApiKeyStore([entry('a', a, [old]) as never]);
    const now = store.authenticate(`Bearer ${a}`);
    const before = store.authenticate(`Bearer ${old}`);
    expect(now.ok && [now.principal.producer, now.previousKey]).toEqual(['a', false]);
    expect(before.ok && [before.principal.producer, before.previousKey, before.principal.mayUse('orders')]).toEqual(['a', true, true]);
  });

  it('is a secret in the config: a bad value is reported by what is wrong, without its content', () => {
    const messageOf = (value: string) => {
      try {
        loadConfig(ingestConfigSchema, { KAFKA_BROKERS: 'h:1', INGEST_API_KEYS: value });
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('loaded');
    };
    // The check's own words (a typo was reported as only "is invalid"), which never quote a key.
    const short = messageOf('[{"producer":"p","key":"leaky-secret-value"}]');
    expect(short).toMatch(/INGEST_API_KEYS \[0\]\.key must be 24 to 512 visible ASCII characters/);
    expect(short).not.toContain('leaky-secret-value');
    // A syntax error quotes the input: hidden.
    const broken = messageOf('[{"producer":"p","key":"leaky-secret-value-0123456789"');
    expect(broken).toMatch(/INGEST_API_KEYS is invalid/);
    expect(broken).not.toContain('leaky-secret-value');
  });
});
