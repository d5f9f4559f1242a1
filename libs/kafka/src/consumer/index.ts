export { BatchConsumer, consumerProperties, nextOffsets, partitionKey } from './consumer';
export { type ConsumerOptions, type OnAssign, type OnRevoke, CONSUMER_DEFAULTS } from './options';
export type { ConsumedMessage, PartitionLag, PartitionRef, TopicPartitionOffset } from './types';
