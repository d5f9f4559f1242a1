export { KafkaAdmin } from './admin';
export type { AdminOptions } from './options';
export type { TopicSpec, TopicDescription, PartitionOffsets, ConfigEntry, GroupDescription, GroupMember, GroupState } from './types';
export { CONFIG_SOURCES } from './config-protocol';
