import { SluiceError } from '@sluice/errors';
import { bool, int, json, list, MAX_TIMER_MS, oneOf, str, timerMs, url, urls } from './fields';
import { describeConfig, loadConfig, setTogether } from './load-config';

const schema = {
  port: int('PORT', { default: 8080, min: 1, max: 65535 }),
  brokers: list('BROKERS', { default: ['127.0.0.1:9092'] }),
  mode: oneOf('MODE', ['a', 'b'] as const, { default: 'a' }),
  token: str('TOKEN', { secret: true, pattern: /^[a-z]{8,}$/ }),
  verbose: bool('VERBOSE', { default: false }),
};

describe('loadConfig', () => {
  it('applies defaults, parses values and freezes the result', () => {
    const cfg = loadConfig(schema, { TOKEN: 'abcdefgh', PORT: '9000', BROKERS: 'h1:1, h2:2' });
    expect(cfg).toEqual({ port: 9000, brokers: ['h1:1', 'h2:2'], mode: 'a', token: 'abcdefgh', verbose: false });
    expect(Object.isFrozen(cfg)).toBe(true);
    expect(Object.isFrozen(cfg.brokers)).toBe(true);
  });

  it('reports every problem at once and never prints a secret', () => {
    let err: unknown;
    try {
      loadConfig(schema, { PORT: '70000', MODE: 'c', TOKEN: 'SECRET-VALUE', VERBOSE: 'maybe' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SluiceError);
    const e = err as SluiceError;
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.details.problems).toEqual([
      'PORT must be ≤ 65535',
      'MODE must be one of a, b, got "c"',
      'TOKEN is invalid',
      'VERBOSE must be true or false, got "maybe"',
    ]);
    expect(e.message).not.toContain('SECRET-VALUE');
  });

  it('keeps a timer duration within what a Node timer takes (a longer one fires after 1 ms)', () => {
    const timers = { every: timerMs('EVERY_MS', { default: 1000, min: 10 }), capped: timerMs('CAPPED_MS', { default: 1000, max: 60_000 }) };
    expect(loadConfig(timers, { EVERY_MS: String(MAX_TIMER_MS) }).every).toBe(2 ** 31 - 1);
    expect(() => loadConfig(timers, { EVERY_MS: String(2 ** 31) })).toThrow(/EVERY_MS must be ≤ 2147483647/);
    expect(() => loadConfig(timers, { EVERY_MS: '4294967296' })).toThrow(/EVERY_MS must be ≤ 2147483647/);
    expect(() => loadConfig(timers, { CAPPED_MS: '60001' })).toThrow(/CAPPED_MS must be ≤ 60000/);
  });

  it('requires fields without a default', () => {
    expect(() => loadConfig(schema, {})).toThrow(/TOKEN is required/);
  });

  it('masks secrets in descriptions', () => {
    const cfg = loadConfig(schema, { TOKEN: 'abcdefgh' });
    expect(describeConfig(schema, cfg).token).toBe('***');
  });
});

describe('field checks', () => {
  it('refuses a list that names an item twice', () => {
    expect(list('X').parse('a, b,a')).toEqual({ ok: false, message: 'lists "a" more than once' });
    expect(list('X').parse('a,b')).toEqual({ ok: true, value: ['a', 'b'] });
  });

  it('takes only http(s) URLs, never echoing the value (it may carry credentials)', () => {
    const f = url('REGISTRY', { allowEmpty: true });
    expect(f.parse('http://registry:8081')).toEqual({ ok: true, value: 'http://registry:8081' });
    expect(f.parse('https://user:pw@registry')).toEqual({ ok: false, message: 'must not carry credentials (user:password@); fetch refuses such URLs' });
    expect(f.parse('')).toEqual({ ok: true, value: '' });
    expect(f.parse('htp:/registry')).toEqual({ ok: false, message: 'must be an http(s) URL, not htp:' });
    const bad = f.parse('not a url with secret-pw');
    expect(bad).toEqual({ ok: false, message: 'must be an http(s) URL' });
    expect(url('R').parse('')).toEqual({ ok: false, message: 'must not be empty' });
  });

  it('takes lists of http(s) URLs item by item (an endpoint without a scheme failed every fetch)', () => {
    const f = urls('ENDPOINTS');
    expect(f.parse('http://validate-0:9464/metrics, http://validate-1:9464/metrics')).toEqual({ ok: true, value: ['http://validate-0:9464/metrics', 'http://validate-1:9464/metrics'] });
    expect(f.parse('http://a/m,validate-1:9464/metrics')).toEqual({ ok: false, message: 'item 2 must be an http(s) URL, not validate-1:' });
    expect(f.parse('http://u:pw@a/m')).toEqual({ ok: false, message: 'item 1 must not carry credentials (user:password@); fetch refuses such URLs' });
    expect(f.parse('ftp://a')).toEqual({ ok: false, message: 'item 1 must be an http(s) URL, not ftp:' });
    expect(f.parse('http://a,http://a')).toEqual({ ok: false, message: 'lists item 2 more than once' });
  });

  it("shows a JSON secret's check message, never its syntax error (which quotes the input)", () => {
    const keys = { keys: json<string[]>('KEYS', (v) => (Array.isArray(v) ? undefined : 'must be an array of keys'), { secret: true }) };
    expect(() => loadConfig(keys, { KEYS: '{"k":"hunter2"}' })).toThrow(/KEYS must be an array of keys/);
    let message = '';
    try {
      loadConfig(keys, { KEYS: '["hunter2' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/KEYS is invalid/);
    expect(message).not.toContain('hunter2');
  });

  describe('a key id and its secret', () => {
    const creds = {
      keyId: str('KEY_ID', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true }),
      secret: str('KEY_SECRET', { default: '', allowEmpty: true, noEdgeSpace: true, secret: true }),
    };
    const load = (env: Record<string, string>) => loadConfig(creds, env, { checks: [setTogether(creds, 'keyId', 'secret')] });

    it('are both set or both empty: one alone would fall back to a default without a word', () => {
      expect(load({})).toEqual({ keyId: '', secret: '' });
      expect(load({ KEY_ID: 'id', KEY_SECRET: 's3cr3t' })).toEqual({ keyId: 'id', secret: 's3cr3t' });
      expect(() => load({ KEY_ID: 'id' })).toThrow('KEY_ID and KEY_SECRET must be set together (KEY_SECRET is empty)');
      expect(() => load({ KEY_SECRET: 's3cr3t' })).toThrow('KEY_ID and KEY_SECRET must be set together (KEY_ID is empty)');
    });

    it('are refused with whitespace at an end, saying so without quoting them', () => {
      let err: unknown;
      try {
        load({ KEY_ID: 'id', KEY_SECRET: 's3cr3t\n' });
      } catch (e) {
        err = e;
      }
      expect((err as SluiceError).details.problems).toEqual(['KEY_SECRET must not begin or end with whitespace']);
      expect((err as SluiceError).message).not.toContain('s3cr3t');
      expect(() => load({ KEY_ID: ' id', KEY_SECRET: 's' })).toThrow('KEY_ID must not begin or end with whitespace');
    });

    it('are checked together once both have parsed, whatever else is wrong', () => {
      expect(() => load({ KEY_ID: 'id ' })).toThrow(/^invalid configuration:\n {2}- KEY_ID must not begin or end with whitespace$/);
      const withPort = { ...creds, port: int('PORT', { default: 80, max: 65535 }) };
      expect(() => loadConfig(withPort, { PORT: '70000', KEY_ID: 'id' }, { checks: [setTogether(withPort, 'keyId', 'secret')] })).toThrow(
        /PORT must be ≤ 65535\n {2}- KEY_ID and KEY_SECRET must be set together/,
      );
    });
  });
});
