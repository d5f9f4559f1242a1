/**
 * The test services' settings, from the SLUICE_TEST_* variables tools/test-all.sh exports after
 * starting them. Test code only (lint keeps it out of every `src/` but its own): a missing
 * variable fails the test with how to start the service, never skips it.
 */

const TEST_ALL = 'tools/test-all.sh does both';

/** Each named variable's value; throws naming the missing ones and `howToStart`. */
function required<const N extends readonly string[]>(names: N, howToStart: string): { [K in N[number]]: string } {
  const missing = names.filter((n) => !process.env[n]);
  if (missing.length > 0) throw new Error(`${missing.join(', ')} not set: ${howToStart} (${TEST_ALL})`);
  return Object.fromEntries(names.map((n) => [n, process.env[n] as string])) as { [K in N[number]]: string };
}

/** The test broker's plaintext listener (host:port). */
export function testBrokers(): string {
  return required(['SLUICE_TEST_KAFKA_BROKERS'], 'start Kafka (KAFKA_PORT=19092 bash tools/kafka/kafka.sh start) and export SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092').SLUICE_TEST_KAFKA_BROKERS;
}

/** The test broker's secure listeners (tools/kafka/kafka.sh with KAFKA_SECURE_LISTENERS=1). */
export interface SecureListeners {
  /** SASL over TLS: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. */
  saslSsl: string;
  /** TLS requiring a client certificate. */
  ssl: string;
  /** ca.pem, client-cert.pem, client-key.pem. */
  tlsDir: string;
  username: string;
  password: string;
}

export function testSecureListeners(): SecureListeners {
  const e = required(
    ['SLUICE_TEST_KAFKA_SASL_SSL_BROKERS', 'SLUICE_TEST_KAFKA_SSL_BROKERS', 'SLUICE_TEST_KAFKA_TLS_DIR', 'SLUICE_TEST_KAFKA_SASL_USERNAME', 'SLUICE_TEST_KAFKA_SASL_PASSWORD'],
    "start Kafka with KAFKA_SECURE_LISTENERS=1 and export what 'KAFKA_SECURE_LISTENERS=1 bash tools/kafka/kafka.sh env' prints",
  );
  return {
    saslSsl: e.SLUICE_TEST_KAFKA_SASL_SSL_BROKERS,
    ssl: e.SLUICE_TEST_KAFKA_SSL_BROKERS,
    tlsDir: e.SLUICE_TEST_KAFKA_TLS_DIR,
    username: e.SLUICE_TEST_KAFKA_SASL_USERNAME,
    password: e.SLUICE_TEST_KAFKA_SASL_PASSWORD,
  };
}

/**
 * The SASL-over-TLS listener and the services' KAFKA_* variables that connect to it with
 * `mechanism`, the test user and the test CA.
 */
export function testSecureKafka(mechanism = 'SCRAM-SHA-512'): { brokers: string; env: Record<string, string> } {
  const l = testSecureListeners();
  return {
    brokers: l.saslSsl,
    env: {
      KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
      KAFKA_SASL_MECHANISM: mechanism,
      KAFKA_SASL_USERNAME: l.username,
      KAFKA_SASL_PASSWORD: l.password,
      KAFKA_SSL_CA_LOCATION: `${l.tlsDir}/ca.pem`,
    },
  };
}

/** The Confluent-compatible schema registry (tools/services.d/20-registry.sh). */
export function testRegistryUrl(): string {
  return required(['SLUICE_TEST_REGISTRY_URL'], 'start tools/services.d/20-registry.sh and export SLUICE_TEST_REGISTRY_URL=http://127.0.0.1:18081').SLUICE_TEST_REGISTRY_URL;
}

/** The S3-compatible test server (tools/services.d/10-s3.sh). */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

export function testS3(): TestS3 {
  const e = required(
    ['SLUICE_TEST_S3_ENDPOINT', 'SLUICE_TEST_S3_ACCESS_KEY', 'SLUICE_TEST_S3_SECRET_KEY', 'SLUICE_TEST_S3_BUCKET'],
    "run 'bash tools/services.d/10-s3.sh start' and export what 'bash tools/services.d/10-s3.sh env' prints",
  );
  return {
    endpoint: e.SLUICE_TEST_S3_ENDPOINT,
    bucket: e.SLUICE_TEST_S3_BUCKET,
    credentials: { accessKeyId: e.SLUICE_TEST_S3_ACCESS_KEY, secretAccessKey: e.SLUICE_TEST_S3_SECRET_KEY },
  };
}
