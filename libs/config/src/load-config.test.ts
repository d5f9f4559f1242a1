import { SluiceError } from '@sluice/errors';
import { bool, int, list, oneOf, str } from './fields';
import { describeConfig, loadConfig } from './load-config';

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

  it('requires fields without a default', () => {
    expect(() => loadConfig(schema, {})).toThrow(/TOKEN is required/);
  });

  it('masks secrets in descriptions', () => {
    const cfg = loadConfig(schema, { TOKEN: 'abcdefgh' });
    expect(describeConfig(schema, cfg).token).toBe('***');
  });
});
