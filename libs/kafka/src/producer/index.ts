export { KafkaProducer, ProducerClient, producerProperties, type DeliveryReports } from './producer';
export { type ProducerOptions, type Compression, PRODUCER_DEFAULTS } from './options';
export type { ProducerRecord, DeliveryReport, SendOutcome, SendSuccess, SendFailure } from './types';
