export { testBrokers, testRegistryUrl, testS3, testSecureKafka, testSecureListeners, type SecureListeners, type TestS3 } from './env';
export { ephemeralPortRange, freePort, type FreePortOptions } from './ports';
