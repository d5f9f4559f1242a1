export { TransactionalProducer } from './transactional-producer';
export { TransactionalProcessor } from './transactional-processor';
export type { TransactionalProducerOptions, TransactionalProcessorOptions, Transform, ProcessResult } from './options';
