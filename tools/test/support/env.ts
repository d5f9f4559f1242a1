import { testS3 as sharedTestS3 } from '@sluice/testing';
import type { ChaosS3Server } from '../../src/chaos/run';

export { testBrokers, testSecureKafka } from '@sluice/testing';

/** The test S3 server (@sluice/testing) in the chaos runner's shape; missing fails the test, never skips it. */
export function testS3(): ChaosS3Server {
  const s3 = sharedTestS3();
  return { endpoint: s3.endpoint, accessKey: s3.credentials.accessKeyId, secretKey: s3.credentials.secretAccessKey, bucket: s3.bucket };
}
