import { s3FromEnv, type ChaosS3Server } from '../../src/chaos/run';

/** The test broker from SLUICE_TEST_KAFKA_BROKERS; missing fails the test, never skips it. */
export function testBrokers(): string {
  const b = process.env.SLUICE_TEST_KAFKA_BROKERS;
  if (!b) throw new Error('SLUICE_TEST_KAFKA_BROKERS is not set: start Kafka (KAFKA_PORT=19092 bash tools/kafka/kafka.sh start) and export SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092');
  return b;
}

/**
 * The test broker's SASL-over-TLS listener and the KAFKA_* variables that connect to it with
 * `mechanism` and the test CA; missing variables fail the test, never skip it.
 */
export function testSecureKafka(mechanism = 'SCRAM-SHA-512'): { brokers: string; env: Record<string, string> } {
  const e = process.env;
  const brokers = e.SLUICE_TEST_KAFKA_SASL_SSL_BROKERS;
  if (!brokers || !e.SLUICE_TEST_KAFKA_TLS_DIR || !e.SLUICE_TEST_KAFKA_SASL_USERNAME || !e.SLUICE_TEST_KAFKA_SASL_PASSWORD) {
    throw new Error("SLUICE_TEST_KAFKA_SASL_SSL_BROKERS & co. are not set: start Kafka with KAFKA_SECURE_LISTENERS=1 and export what 'KAFKA_SECURE_LISTENERS=1 bash tools/kafka/kafka.sh env' prints (tools/test-all.sh does both)");
  }
  return {
    brokers,
    env: {
      KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
      KAFKA_SASL_MECHANISM: mechanism,
      KAFKA_SASL_USERNAME: e.SLUICE_TEST_KAFKA_SASL_USERNAME,
      KAFKA_SASL_PASSWORD: e.SLUICE_TEST_KAFKA_SASL_PASSWORD,
      KAFKA_SSL_CA_LOCATION: `${e.SLUICE_TEST_KAFKA_TLS_DIR}/ca.pem`,
    },
  };
}

/** The test S3 server from SLUICE_TEST_S3_*; missing fails the test, never skips it. */
export function testS3(): ChaosS3Server {
  const server = s3FromEnv();
  if (!server) throw new Error("SLUICE_TEST_S3_* are not set: run 'bash tools/services.d/10-s3.sh start' and export what 'bash tools/services.d/10-s3.sh env' prints (tools/test-all.sh does both)");
  return server;
}
