export { KafkaAdmin } from './admin';
export type { AdminOptions } from './options';
export type { TopicSpec, TopicDescription, PartitionOffsets, ConfigEntry } from './types';
export { CONFIG_SOURCES } from './config-protocol';
