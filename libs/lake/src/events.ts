import { channel } from 'node:diagnostics_channel';

/** diagnostics_channel names libs/lake publishes on (libs/telemetry subscribes). */
export const LAKE_CHANNELS = {
  /** A commit landed: {@link CommitEvent}. */
  commit: 'sluice:lake:commit',
  /** A commit attempt lost the race and was retried or refused: {@link ConflictEvent}. */
  conflict: 'sluice:lake:conflict',
  /** A MERGE finished: {@link MergeEvent}. */
  merge: 'sluice:lake:merge',
  /** A compaction finished: {@link CompactionEvent}. */
  compaction: 'sluice:lake:compaction',
  /** A vacuum finished: {@link VacuumEvent}. */
  vacuum: 'sluice:lake:vacuum',
  /** A checkpoint was written: {@link CheckpointEvent}. */
  checkpoint: 'sluice:lake:checkpoint',
  /**
   * A checkpoint due after a commit failed (the commit stands), or one in the log could not be
   * read and a snapshot was replayed past it (`table` is then the table's URI): {@link CheckpointFailedEvent}.
   */
  checkpointFailed: 'sluice:lake:checkpoint-failed',
  /** File counts of a freshly loaded latest snapshot: {@link TableStatsEvent}. */
  tableStats: 'sluice:lake:table-stats',
} as const;

/** Payload of `sluice:lake:commit`. */
export interface CommitEvent {
  table: string;
  version: number;
  operation: string;
  /** Action counts by kind. */
  actions: { add: number; remove: number; txn: number; metaData: number; protocol: number };
  attempts: number;
  durationMs: number;
}
/** Payload of `sluice:lake:conflict`. */
export interface ConflictEvent {
  table: string;
  version: number;
  operation: string;
  /** 'retry' when the winner did not conflict, else the conflict kind. */
  outcome: string;
}
/** Payload of `sluice:lake:merge`. */
export interface MergeEvent {
  table: string;
  version: number;
  filesRead: number;
  bytesRead: number;
  filesRewritten: number;
  bytesRewritten: number;
  durationMs: number;
}
/** Payload of `sluice:lake:compaction`. */
export interface CompactionEvent {
  table: string;
  version: number | undefined;
  filesRemoved: number;
  bytesRemoved: number;
  filesAdded: number;
  bytesAdded: number;
  durationMs: number;
}
/** Payload of `sluice:lake:vacuum`. */
export interface VacuumEvent {
  table: string;
  filesDeleted: number;
  bytesDeleted: number;
  durationMs: number;
}
/** Payload of `sluice:lake:checkpoint`. */
export interface CheckpointEvent {
  table: string;
  version: number;
  rows: number;
  bytes: number;
  durationMs: number;
}
/** Payload of `sluice:lake:checkpoint-failed`. */
export interface CheckpointFailedEvent {
  table: string;
  /** The version whose checkpoint was not written. */
  version: number;
  /** The error's code (`LAKE_*`), or `UNKNOWN`. */
  code: string;
  message: string;
}

/** Payload of `sluice:lake:table-stats`. */
export interface TableStatsEvent {
  table: string;
  version: number;
  /** When that version was committed (its log file's modification time, as readers date it), ms since epoch. */
  committedAtMs: number;
  files: number;
  /** Files below the small-file size (the table's compaction thresholds). */
  smallFiles: number;
  /** Small files a compaction pass would pick up now (partitions with at least the minimum of them). */
  compactionBacklog: number;
}

const channels = {
  commit: channel(LAKE_CHANNELS.commit),
  conflict: channel(LAKE_CHANNELS.conflict),
  merge: channel(LAKE_CHANNELS.merge),
  compaction: channel(LAKE_CHANNELS.compaction),
  vacuum: channel(LAKE_CHANNELS.vacuum),
  checkpoint: channel(LAKE_CHANNELS.checkpoint),
  checkpointFailed: channel(LAKE_CHANNELS.checkpointFailed),
  tableStats: channel(LAKE_CHANNELS.tableStats),
};

/** True when someone listens on the channel (lets callers skip computing a payload). */
export function hasSubscribers(kind: keyof typeof channels): boolean {
  return channels[kind].hasSubscribers;
}

/** Publishes only when someone subscribes (no cost otherwise). */
export function publish<K extends keyof typeof channels>(kind: K, message: object): void {
  const ch = channels[kind];
  if (ch.hasSubscribers) ch.publish(message);
}
