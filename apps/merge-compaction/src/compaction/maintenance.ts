import { isSluiceError } from '@sluice/errors';
import type { LakeTable, LiveFile } from '@sluice/lake';
import type { Logger, SluiceMetrics } from '@sluice/telemetry';

/** Compaction and vacuum settings. */
export interface MaintenanceOptions {
  /** A partition is compacted when it holds at least this many small files. */
  readonly minSmallFiles: number;
  /** A file below this size is small. */
  readonly smallFileBytes: number;
  /** Output file size of compaction. */
  readonly targetFileBytes: number;
  /** Removed files stay this long before vacuum deletes them (readers of old versions, orphan safety). */
  readonly retentionMs: number;
  readonly vacuum: boolean;
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
}

/** What one maintenance pass over a table did. */
export interface MaintenanceOutcome {
  readonly partitionsCompacted: number;
  readonly filesRemoved: number;
  readonly conflicts: number;
  readonly filesVacuumed: number;
}

/** A compaction plan: partitions (Delta partition values) with enough small files. */
export function planCompaction(
  files: readonly LiveFile[],
  partitionColumns: readonly string[],
  options: Pick<MaintenanceOptions, 'minSmallFiles' | 'smallFileBytes'>,
): { partition: Record<string, string | null>; smallFiles: number }[] {
  const groups = new Map<string, { partition: Record<string, string | null>; smallFiles: number }>();
  for (const f of files) {
    if (f.size >= options.smallFileBytes) continue;
    const values = Object.fromEntries(partitionColumns.map((c) => [c, f.partitionValues[c] ?? null]));
    const key = JSON.stringify(partitionColumns.map((c) => values[c]));
    const g = groups.get(key) ?? { partition: values, smallFiles: 0 };
    g.smallFiles += 1;
    groups.set(key, g);
  }
  return [...groups.values()].filter((g) => g.smallFiles >= options.minSmallFiles).sort((a, b) => b.smallFiles - a.smallFiles);
}

/**
 * Per-partition compaction and vacuum of one table. A compaction that loses a race (its files
 * were removed or rewritten meanwhile) is abandoned and re-planned next pass: it is never
 * retried against, and never blocks, a data commit (invariant 7).
 *
 * Its metrics (compacted and vacuumed files, commit duration and outcome, file counts) come from
 * libs/lake's events through libs/telemetry; only `commits{outcome="error"}` is recorded here,
 * because the lake publishes no failure event (docs/design/telemetry.md, "Who records what").
 */
export async function maintainTable(table: LakeTable, options: MaintenanceOptions, sortBy?: readonly string[]): Promise<MaintenanceOutcome> {
  const snap = await table.snapshot();
  const plan = planCompaction(snap.files, snap.partitionColumns, options);
  let filesRemoved = 0;
  let conflicts = 0;
  let partitionsCompacted = 0;
  for (const p of plan) {
    try {
      const r = await table.compact({ partition: p.partition, targetFileBytes: options.targetFileBytes, sortBy });
      if (r.version === undefined) continue;
      partitionsCompacted += 1;
      filesRemoved += r.filesRemoved;
      options.logger.info({ table: table.name, version: r.version, partition: p.partition, filesRemoved: r.filesRemoved, filesAdded: r.filesAdded, bytes: r.bytesAdded }, 'compacted');
    } catch (err) {
      if (!isSluiceError(err, 'LAKE_COMMIT_CONFLICT')) {
        // libs/lake publishes no event for a failed (non-conflict) commit: this one is ours.
        options.metrics.commits.add(1, { table: table.name, outcome: 'error' });
        throw err;
      }
      // libs/lake already published the conflict (commits{outcome="conflict"}).
      conflicts += 1;
      options.logger.info({ table: table.name, partition: p.partition, err }, 'compaction lost a race; re-planned next pass');
    }
  }
  let filesVacuumed = 0;
  if (options.vacuum) {
    const v = await table.vacuum({ retentionMs: options.retentionMs });
    filesVacuumed = v.filesDeleted.length;
    if (filesVacuumed > 0) {
      options.logger.info({ table: table.name, files: filesVacuumed, bytes: v.bytesDeleted }, 'vacuumed');
    }
  }
  return { partitionsCompacted, filesRemoved, conflicts, filesVacuumed };
}
