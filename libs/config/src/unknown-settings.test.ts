import { int, str } from './fields';
import { loadConfig } from './load-config';
import { editDistance, unknownSettings, warnIgnoredSettings } from './unknown-settings';

const schema = {
  maxBodyBytes: int('APP_MAX_BODY_BYTES', { default: 1024 }),
  host: str('APP_HOST', { default: '127.0.0.1' }),
  brokers: str('KAFKA_BROKERS', { default: 'b:1' }),
};

describe('unknownSettings', () => {
  it('names set variables under the prefix that no field reads, and the unset field each is a typo of', () => {
    const env = { APP_MAX_BODY_BYTE: '10', APP_HOTS: 'x', APP_DEBUG_EVERYTHING: '1', APP_HOST: '0.0.0.0', OTHER_THING: '1', KAFKA_BROKER: 'x' };
    expect(unknownSettings(schema, env, ['APP_'])).toEqual([
      // APP_HOTS is two edits from APP_HOST, which is set: another variable, not a typo of it.
      { name: 'APP_DEBUG_EVERYTHING' },
      { name: 'APP_HOTS' },
      { name: 'APP_MAX_BODY_BYTE', typoOf: 'APP_MAX_BODY_BYTES' },
    ]);
    // Without its unit: six characters short, yet plainly the same setting.
    expect(unknownSettings(schema, { APP_MAX_BODY: '10' }, ['APP_'])).toEqual([{ name: 'APP_MAX_BODY', typoOf: 'APP_MAX_BODY_BYTES' }]);
  });

  it('passes over the variables Kubernetes injects for the Services of the namespace', () => {
    const env = {
      APP_INGEST_SERVICE_HOST: '10.0.0.1',
      APP_INGEST_SERVICE_PORT: '8080',
      APP_INGEST_SERVICE_PORT_HTTP: '8080',
      APP_INGEST_PORT: 'tcp://10.0.0.1:8080',
      APP_INGEST_PORT_8080_TCP: 'tcp://10.0.0.1:8080',
      APP_INGEST_PORT_8080_TCP_ADDR: '10.0.0.1',
      APP_INGEST_PORT_8080_TCP_PORT: '8080',
      APP_INGEST_PORT_8080_TCP_PROTO: 'tcp',
      APP_ADMIN_PORT: '9000',
    };
    expect(unknownSettings(schema, env, ['APP_'])).toEqual([{ name: 'APP_ADMIN_PORT' }]);
  });

  it('logs the ignored variables once, naming the service, and nothing when every variable is a setting', () => {
    const warnings: Array<[object, string]> = [];
    const log = { warn: (fields: object, message: string) => void warnings.push([fields, message]) };
    warnIgnoredSettings(log, 'ingest', schema, { APP_HOST: 'h', APP_DEBUG: '1', APP_TRACE: '1', OTHER: 'x' }, ['APP_']);
    expect(warnings).toEqual([[{ variables: ['APP_DEBUG', 'APP_TRACE'] }, 'variables that are not settings of ingest are ignored']]);
    warnIgnoredSettings(log, 'ingest', schema, { APP_HOST: 'h', OTHER: 'x' }, ['APP_']);
    expect(warnings).toHaveLength(1);
  });

  it('counts single-character edits', () => {
    expect(editDistance('APP_HOST', 'APP_HOST')).toBe(0);
    expect(editDistance('APP_HOST', 'APP_HOTS')).toBe(2);
    expect(editDistance('APP_HOST', 'APP_HOSTS')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('loadConfig with prefixes', () => {
  it('refuses a typo of an unset setting, which would otherwise leave it at its default', () => {
    expect(() => loadConfig(schema, { APP_MAX_BODY_BYTE: '10' }, { prefixes: ['APP_'] })).toThrow(
      /APP_MAX_BODY_BYTE is not a setting; did you mean APP_MAX_BODY_BYTES \(unset\)\?/,
    );
    expect(loadConfig(schema, { APP_MAX_BODY_BYTE: '10' }).maxBodyBytes).toBe(1024);
  });

  it('loads beside variables under the prefix that are no typo', () => {
    expect(loadConfig(schema, { APP_DEBUG_EVERYTHING: '1', APP_MAX_BODY_BYTES: '2048' }, { prefixes: ['APP_'] }).maxBodyBytes).toBe(2048);
  });
});
