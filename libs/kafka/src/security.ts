/**
 * How clients authenticate to and encrypt their traffic with the brokers: TLS (server
 * verification, optional client certificate) and SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512,
 * the mechanisms managed Kafka services offer. One typed description, translated here into
 * librdkafka properties and read by libs/kafka's own wire connection (wire/connection.ts),
 * so every client of a service connects the same way.
 */
import { accessSync, constants } from 'node:fs';
import { bool, loadConfig, oneOf, str } from '@sluice/config';
import { kafkaError } from './errors';
import type { RdkafkaProperties } from './connection';

/** Kafka's `security.protocol` values. */
export const SECURITY_PROTOCOLS = ['plaintext', 'ssl', 'sasl_plaintext', 'sasl_ssl'] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

/** SASL mechanisms both librdkafka and the admin's wire connection speak. */
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** SASL credentials. */
export interface SaslCredentials {
  mechanism: SaslMechanism;
  username: string;
  password: string;
}

/** TLS settings; every file is PEM. */
export interface TlsSettings {
  /** CA certificates that sign the brokers' certificates; default the system's trusted CAs. */
  caFile?: string;
  /** Client certificate (mutual TLS); needs `keyFile`. */
  certFile?: string;
  /** Private key of the client certificate. */
  keyFile?: string;
  /** Passphrase of an encrypted `keyFile`. */
  keyPassword?: string;
  /** Check that a broker's certificate names the host connected to; default true. */
  verifyHostname?: boolean;
}

/** How every client of a service connects. Absent = plaintext, no authentication. */
export interface KafkaSecurity {
  protocol: SecurityProtocol;
  /** Required for `sasl_*`, refused otherwise. */
  sasl?: SaslCredentials;
  /** Used for `ssl` and `sasl_ssl`, refused otherwise. */
  tls?: TlsSettings;
}

/** Whether the protocol runs over TLS. */
export function usesTls(security: KafkaSecurity | undefined): boolean {
  return security?.protocol === 'ssl' || security?.protocol === 'sasl_ssl';
}

/**
 * KAFKA_INVALID_CONFIG naming what does not fit together and every TLS file this process cannot
 * read (librdkafka would refuse to create the client with a bare "Erroneous state").
 */
export function checkSecurity(security: KafkaSecurity): void {
  const problems: string[] = [];
  const sasl = security.protocol.startsWith('sasl_');
  if (sasl && security.sasl === undefined) problems.push(`${security.protocol} needs SASL credentials`);
  if (!sasl && security.sasl !== undefined) problems.push(`SASL credentials given but the protocol is ${security.protocol}`);
  if (security.sasl !== undefined && security.sasl.username === '') problems.push('the SASL username is empty');
  if (security.sasl !== undefined && security.sasl.password === '') problems.push('the SASL password is empty');
  const tls = security.tls;
  if (tls !== undefined && !usesTls(security) && Object.values(tls).some((v) => v !== undefined)) {
    problems.push(`TLS settings given but the protocol is ${security.protocol}`);
  }
  if (tls?.certFile !== undefined && tls.keyFile === undefined) problems.push('a client certificate needs its key file');
  if (tls?.keyFile !== undefined && tls.certFile === undefined) problems.push('a client key needs its certificate file');
  if (tls?.keyPassword !== undefined && tls.keyFile === undefined) problems.push('a key password needs a key file');
  if (usesTls(security)) {
    for (const [what, file] of [['CA file', tls?.caFile], ['certificate file', tls?.certFile], ['key file', tls?.keyFile]] as const) {
      if (file === undefined) continue;
      try {
        accessSync(file, constants.R_OK);
      } catch (err) {
        problems.push(`cannot read the ${what} ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
      }
    }
  }
  if (problems.length > 0) {
    throw kafkaError('KAFKA_INVALID_CONFIG', `Kafka security settings: ${problems.join('; ')}`, { details: { operation: 'connect', problems } });
  }
}

/** librdkafka properties of `security` (none for plaintext or absent). */
export function securityProperties(security: KafkaSecurity | undefined): RdkafkaProperties {
  if (security === undefined) return {};
  checkSecurity(security);
  const props: RdkafkaProperties = { 'security.protocol': security.protocol };
  if (security.sasl !== undefined) {
    props['sasl.mechanisms'] = security.sasl.mechanism;
    props['sasl.username'] = security.sasl.username;
    props['sasl.password'] = security.sasl.password;
  }
  if (usesTls(security)) {
    const tls = security.tls ?? {};
    if (tls.caFile !== undefined) props['ssl.ca.location'] = tls.caFile;
    if (tls.certFile !== undefined) props['ssl.certificate.location'] = tls.certFile;
    if (tls.keyFile !== undefined) props['ssl.key.location'] = tls.keyFile;
    if (tls.keyPassword !== undefined) props['ssl.key.password'] = tls.keyPassword;
    props['ssl.endpoint.identification.algorithm'] = tls.verifyHostname === false ? 'none' : 'https';
  }
  return props;
}

/**
 * The environment variables every service reads for {@link KafkaSecurity}; spread them into a
 * service's config schema and turn the loaded values into options with
 * {@link kafkaSecurityFromConfig}. Names follow librdkafka's properties.
 */
export const kafkaSecurityConfigFields = {
  kafkaSecurityProtocol: oneOf('KAFKA_SECURITY_PROTOCOL', SECURITY_PROTOCOLS, {
    default: 'plaintext',
    doc: 'how every Kafka client of the service connects: plaintext, ssl, sasl_plaintext or sasl_ssl',
  }),
  kafkaSaslMechanism: oneOf('KAFKA_SASL_MECHANISM', SASL_MECHANISMS, { default: 'PLAIN', doc: 'SASL mechanism for sasl_* protocols' }),
  kafkaSaslUsername: str('KAFKA_SASL_USERNAME', { default: '', allowEmpty: true, doc: 'SASL username; required for sasl_* protocols' }),
  kafkaSaslPassword: str('KAFKA_SASL_PASSWORD', { default: '', allowEmpty: true, secret: true, doc: 'SASL password (from a Secret); required for sasl_* protocols' }),
  kafkaSslCaLocation: str('KAFKA_SSL_CA_LOCATION', { default: '', allowEmpty: true, doc: "PEM file of the CAs that sign the brokers' certificates; empty = the system's trusted CAs" }),
  kafkaSslCertificateLocation: str('KAFKA_SSL_CERTIFICATE_LOCATION', { default: '', allowEmpty: true, doc: 'PEM client certificate for mutual TLS' }),
  kafkaSslKeyLocation: str('KAFKA_SSL_KEY_LOCATION', { default: '', allowEmpty: true, doc: 'PEM private key of the client certificate' }),
  kafkaSslKeyPassword: str('KAFKA_SSL_KEY_PASSWORD', { default: '', allowEmpty: true, secret: true, doc: 'passphrase of an encrypted client key' }),
  kafkaSslVerifyHostname: bool('KAFKA_SSL_VERIFY_HOSTNAME', { default: true, doc: "check that a broker's certificate names the host connected to" }),
};

/** Prefixes of {@link kafkaSecurityConfigFields}: a service lists them so a mistyped one is reported. */
export const KAFKA_SECURITY_PREFIXES = ['KAFKA_SECURITY_', 'KAFKA_SASL_', 'KAFKA_SSL_'] as const;

/** The values {@link kafkaSecurityConfigFields} produce. */
export interface KafkaSecurityConfig {
  readonly kafkaSecurityProtocol: SecurityProtocol;
  readonly kafkaSaslMechanism: SaslMechanism;
  readonly kafkaSaslUsername: string;
  readonly kafkaSaslPassword: string;
  readonly kafkaSslCaLocation: string;
  readonly kafkaSslCertificateLocation: string;
  readonly kafkaSslKeyLocation: string;
  readonly kafkaSslKeyPassword: string;
  readonly kafkaSslVerifyHostname: boolean;
}

/**
 * Loaded settings as {@link KafkaSecurity}; undefined for plaintext. KAFKA_INVALID_CONFIG when they
 * do not fit together (credentials missing for sasl_*, TLS files set for a plaintext protocol…),
 * so a misconfigured service stops at start rather than retrying a connection for ever.
 */
export function kafkaSecurityFromConfig(config: KafkaSecurityConfig): KafkaSecurity | undefined {
  const optional = (v: string) => (v === '' ? undefined : v);
  const protocol = config.kafkaSecurityProtocol;
  const saslSet = config.kafkaSaslUsername !== '' || config.kafkaSaslPassword !== '';
  const security: KafkaSecurity = {
    protocol,
    sasl: protocol.startsWith('sasl_') || saslSet ? { mechanism: config.kafkaSaslMechanism, username: config.kafkaSaslUsername, password: config.kafkaSaslPassword } : undefined,
    tls: {
      caFile: optional(config.kafkaSslCaLocation),
      certFile: optional(config.kafkaSslCertificateLocation),
      keyFile: optional(config.kafkaSslKeyLocation),
      keyPassword: optional(config.kafkaSslKeyPassword),
      verifyHostname: config.kafkaSslVerifyHostname ? undefined : false,
    },
  };
  checkSecurity(security);
  return protocol === 'plaintext' ? undefined : security;
}

/** A loaded config's brokers and security settings, as every client's options take them. */
export function kafkaConnectionFromConfig(config: { readonly brokers: readonly string[] } & KafkaSecurityConfig): {
  brokers: readonly string[];
  security: KafkaSecurity | undefined;
} {
  return { brokers: config.brokers, security: kafkaSecurityFromConfig(config) };
}

/**
 * {@link KafkaSecurity} straight from environment variables, for tools that take no other
 * configuration (the topic and DLQ CLIs); CONFIG_INVALID or KAFKA_INVALID_CONFIG saying what is wrong,
 * a mistyped KAFKA_SASL_* / KAFKA_SSL_* / KAFKA_SECURITY_* name included.
 */
export function kafkaSecurityFromEnv(env: Readonly<Record<string, string | undefined>>): KafkaSecurity | undefined {
  return kafkaSecurityFromConfig(loadConfig(kafkaSecurityConfigFields, env, { prefixes: KAFKA_SECURITY_PREFIXES }));
}
