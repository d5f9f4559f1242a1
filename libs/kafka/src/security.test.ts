import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '@sluice/config';
import { baseProperties } from './connection';
import { kafkaSecurityConfigFields, kafkaSecurityFromConfig, securityProperties, type KafkaSecurity } from './security';

const dir = mkdtempSync(path.join(tmpdir(), 'kafka-security-'));
const file = (name: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, 'PEM');
  return p;
};
const CA = file('ca.pem');
const CERT = file('cert.pem');
const KEY = file('key.pem');
const fromEnv = (env: Record<string, string>) => kafkaSecurityFromConfig(loadConfig(kafkaSecurityConfigFields, env));

describe('Kafka security settings', () => {
  it('translates SASL over TLS into librdkafka properties that win over the pass-through', () => {
    const security: KafkaSecurity = {
      protocol: 'sasl_ssl',
      sasl: { mechanism: 'SCRAM-SHA-512', username: 'svc', password: 'pw' },
      tls: { caFile: CA },
    };
    const props = baseProperties({ brokers: 'b:9093', security, rdkafka: { 'security.protocol': 'plaintext', 'sasl.password': 'old' } });
    expect(props).toMatchObject({
      'security.protocol': 'sasl_ssl',
      'sasl.mechanisms': 'SCRAM-SHA-512',
      'sasl.username': 'svc',
      'sasl.password': 'pw',
      'ssl.ca.location': CA,
      'ssl.endpoint.identification.algorithm': 'https',
    });
    expect(props).not.toHaveProperty('ssl.certificate.location');
  });

  it('translates mutual TLS, an encrypted key and switched-off hostname checks', () => {
    expect(securityProperties({ protocol: 'ssl', tls: { certFile: CERT, keyFile: KEY, keyPassword: 'kp', verifyHostname: false } })).toEqual({
      'security.protocol': 'ssl',
      'ssl.certificate.location': CERT,
      'ssl.key.location': KEY,
      'ssl.key.password': 'kp',
      'ssl.endpoint.identification.algorithm': 'none',
    });
  });

  it('adds nothing without settings, and only the protocol for SASL in plaintext', () => {
    expect(securityProperties(undefined)).toEqual({});
    expect(securityProperties({ protocol: 'sasl_plaintext', sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } })).toEqual({
      'security.protocol': 'sasl_plaintext',
      'sasl.mechanisms': 'PLAIN',
      'sasl.username': 'u',
      'sasl.password': 'p',
    });
  });

  it.each<[string, KafkaSecurity, RegExp]>([
    ['sasl without credentials', { protocol: 'sasl_ssl' }, /needs SASL credentials/],
    ['credentials on a protocol without SASL', { protocol: 'ssl', sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } }, /protocol is ssl/],
    ['an empty username', { protocol: 'sasl_ssl', sasl: { mechanism: 'PLAIN', username: '', password: 'p' } }, /username is empty/],
    ['an empty password', { protocol: 'sasl_ssl', sasl: { mechanism: 'PLAIN', username: 'u', password: '' } }, /password is empty/],
    ['TLS files on plaintext', { protocol: 'sasl_plaintext', sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' }, tls: { caFile: '/ca' } }, /TLS settings given/],
    ['a certificate without its key', { protocol: 'ssl', tls: { certFile: '/c' } }, /needs its key/],
    ['a key without its certificate', { protocol: 'ssl', tls: { keyFile: '/k' } }, /needs its certificate/],
  ])('refuses %s with KAFKA_INVALID_CONFIG', (_case, security, message) => {
    expect(() => securityProperties(security)).toThrow(expect.objectContaining({ code: 'KAFKA_INVALID_CONFIG', message: expect.stringMatching(message) }));
  });

  it('refuses a TLS file it cannot read, naming it (librdkafka would only say "Erroneous state")', () => {
    const missing = path.join(dir, 'missing-key.pem');
    expect(() => securityProperties({ protocol: 'ssl', tls: { caFile: CA, certFile: CERT, keyFile: missing } })).toThrow(
      expect.objectContaining({ code: 'KAFKA_INVALID_CONFIG', message: expect.stringContaining(`cannot read the key file ${missing} (ENOENT)`) }),
    );
  });

  it('reads the environment: plaintext by default, every field when set', () => {
    expect(fromEnv({})).toBeUndefined();
    expect(
      fromEnv({
        KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
        KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
        KAFKA_SASL_USERNAME: 'svc',
        KAFKA_SASL_PASSWORD: 'pw',
        KAFKA_SSL_CA_LOCATION: CA,
        KAFKA_SSL_VERIFY_HOSTNAME: 'false',
      }),
    ).toEqual({
      protocol: 'sasl_ssl',
      sasl: { mechanism: 'SCRAM-SHA-256', username: 'svc', password: 'pw' },
      tls: { caFile: CA, certFile: undefined, keyFile: undefined, keyPassword: undefined, verifyHostname: false },
    });
  });

  it('refuses at load what does not fit together, rather than connecting without it', () => {
    expect(() => fromEnv({ KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'pw' })).toThrow(/protocol is plaintext/);
    expect(() => fromEnv({ KAFKA_SECURITY_PROTOCOL: 'sasl_ssl', KAFKA_SASL_USERNAME: 'svc' })).toThrow(/password is empty/);
    expect(() => fromEnv({ KAFKA_SSL_CA_LOCATION: CA })).toThrow(/TLS settings given but the protocol is plaintext/);
    expect(() => fromEnv({ KAFKA_SSL_VERIFY_HOSTNAME: 'false' })).toThrow(/TLS settings given/);
    expect(() => fromEnv({ KAFKA_SECURITY_PROTOCOL: 'tls' })).toThrow(/KAFKA_SECURITY_PROTOCOL/);
  });

  it('never shows the passwords in a configuration error', () => {
    let message = '';
    try {
      loadConfig(kafkaSecurityConfigFields, { KAFKA_SASL_PASSWORD: 'hunter2-secret', KAFKA_SECURITY_PROTOCOL: 'nope' });
    } catch (err) {
      message = `${(err as Error).message} ${JSON.stringify(err)}`;
    }
    expect(message).toContain('KAFKA_SECURITY_PROTOCOL');
    expect(message).not.toContain('hunter2');
  });
});
