import type { ConfigEntry } from './config-protocol';

export type { ConfigEntry };

/** A topic to create. */
export interface TopicSpec {
  name: string;
  partitions: number;
  /** Default 1 (the local single broker); production clusters use 3. */
  replicationFactor?: number;
  /** Topic-level configs, e.g. `{ 'retention.ms': '604800000' }`. */
  configs?: Readonly<Record<string, string>>;
}

/** What the cluster says about a topic. */
export interface TopicDescription {
  name: string;
  partitions: number;
  replicationFactor: number;
  /** Partitions with no leader right now (every replica down, or an election in progress): nothing can be produced to them. */
  leaderlessPartitions: number[];
}

/** Offsets of one partition: committed by a group (next offset to read; null if none) and the end. */
export interface PartitionOffsets {
  topic: string;
  partition: number;
  committed: number | null;
  /** End offset: high watermark, or the last stable offset under read_committed. */
  end: number;
  /**
   * `end - committed` (or `end - start` when nothing committed). Offsets count transaction
   * markers too: after a transactional producer's commit, a fully caught-up group shows lag 1.
   */
  lag: number;
}

/** A consumer group as its coordinator describes it. */
export interface GroupDescription {
  groupId: string;
  /** `stable`, `preparing-rebalance`, `completing-rebalance`, `empty`, `dead` or `unknown`. */
  state: GroupState;
  /** Current members and the partitions each one holds. */
  members: GroupMember[];
}

export type GroupState = 'unknown' | 'preparing-rebalance' | 'completing-rebalance' | 'stable' | 'dead' | 'empty';

/** One member of a consumer group. */
export interface GroupMember {
  memberId: string;
  clientId: string;
  /** Partitions assigned to the member (empty while it waits for an assignment). */
  assignment: Array<{ topic: string; partition: number }>;
}
