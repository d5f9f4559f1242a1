export { KafkaProducer, producerProperties } from './producer';
export { type ProducerOptions, type Compression, PRODUCER_DEFAULTS } from './options';
export type { ProducerRecord, DeliveryReport, SendOutcome, SendSuccess, SendFailure } from './types';
