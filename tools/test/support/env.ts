import { s3FromEnv, type ChaosS3Server } from '../../src/chaos/run';

export { testBrokers, testSecureKafka } from '@sluice/testing';

/** The test S3 server from SLUICE_TEST_S3_*; missing fails the test, never skips it. */
export function testS3(): ChaosS3Server {
  const server = s3FromEnv();
  if (!server) throw new Error("SLUICE_TEST_S3_* are not set: run 'bash tools/services.d/10-s3.sh start' and export what 'bash tools/services.d/10-s3.sh env' prints (tools/test-all.sh does both)");
  return server;
}
