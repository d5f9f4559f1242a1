import { s3FromEnv, type ChaosS3Server } from '../../src/chaos/run';

/** The test broker from SLUICE_TEST_KAFKA_BROKERS; missing fails the test, never skips it. */
export function testBrokers(): string {
  const b = process.env.SLUICE_TEST_KAFKA_BROKERS;
  if (!b) throw new Error('SLUICE_TEST_KAFKA_BROKERS is not set: start Kafka (KAFKA_PORT=19092 bash tools/kafka/kafka.sh start) and export SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092');
  return b;
}

/** The test S3 server from SLUICE_TEST_S3_*; missing fails the test, never skips it. */
export function testS3(): ChaosS3Server {
  const server = s3FromEnv();
  if (!server) throw new Error("SLUICE_TEST_S3_* are not set: run 'bash tools/services.d/10-s3.sh start' and export what 'bash tools/services.d/10-s3.sh env' prints (tools/test-all.sh does both)");
  return server;
}
