import { testBrokers, testS3, testSecureKafka } from './env';

describe('test service settings from the environment', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('fails naming every missing variable and how to start the service, never returns a placeholder', () => {
    delete process.env.SLUICE_TEST_S3_ENDPOINT;
    delete process.env.SLUICE_TEST_S3_BUCKET;
    process.env.SLUICE_TEST_S3_ACCESS_KEY = 'k';
    process.env.SLUICE_TEST_S3_SECRET_KEY = 's';
    expect(() => testS3()).toThrow(/^SLUICE_TEST_S3_ENDPOINT, SLUICE_TEST_S3_BUCKET not set: run 'bash tools\/services.d\/10-s3.sh start'/);
    process.env.SLUICE_TEST_KAFKA_BROKERS = '';
    expect(() => testBrokers()).toThrow(/SLUICE_TEST_KAFKA_BROKERS not set: start Kafka/);
  });

  it('maps the secure listener to the services\' KAFKA_* variables', () => {
    Object.assign(process.env, {
      SLUICE_TEST_KAFKA_SASL_SSL_BROKERS: '127.0.0.1:19094',
      SLUICE_TEST_KAFKA_SSL_BROKERS: '127.0.0.1:19095',
      SLUICE_TEST_KAFKA_TLS_DIR: '/tls',
      SLUICE_TEST_KAFKA_SASL_USERNAME: 'u',
      SLUICE_TEST_KAFKA_SASL_PASSWORD: 'p',
    });
    expect(testSecureKafka('PLAIN')).toEqual({
      brokers: '127.0.0.1:19094',
      env: { KAFKA_SECURITY_PROTOCOL: 'sasl_ssl', KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p', KAFKA_SSL_CA_LOCATION: '/tls/ca.pem' },
    });
  });
});
