/**
 * @sluice/kafka — typed wrappers over @confluentinc/kafka-javascript (its node-rdkafka-style API):
 * idempotent producer, batch consumer with manual offsets, transactional
 * consume-transform-produce, admin helpers, one error translation point, diagnostics channels,
 * and the Java-compatible murmur2 partitioner.
 */
export * from './producer';
export * from './consumer';
export * from './transactions';
export * from './admin';
export {
  KAFKA_ERRORS,
  type KafkaErrorCode,
  type KafkaError,
  type KafkaErrorContext,
  kafkaError,
  translateKafkaError,
  librdkafkaErrorName,
} from './errors';
export {
  KAFKA_CHANNELS,
  type KafkaChannel,
  type ProducerQueueEvent,
  type ProduceAckedEvent,
  type ProduceFailedEvent,
  type ConsumerBatchEvent,
  type PartitionsEvent,
  type OffsetsCommittedEvent,
  type TransactionEvent,
  type LagEvent,
  type ClientErrorEvent,
} from './channels';
export { type ConnectionOptions, type RdkafkaProperties, brokerList } from './connection';
export {
  type KafkaSecurity,
  type KafkaSecurityConfig,
  type SaslCredentials,
  type SaslMechanism,
  type SecurityProtocol,
  type TlsSettings,
  SASL_MECHANISMS,
  SECURITY_PROTOCOLS,
  kafkaSecurityConfigFields,
  KAFKA_SECURITY_PREFIXES,
  kafkaSecurityFromConfig,
  kafkaConnectionFromConfig,
  kafkaSecurityFromEnv,
} from './security';
export { murmur2, toPositive, partitionForKey } from './murmur2';
