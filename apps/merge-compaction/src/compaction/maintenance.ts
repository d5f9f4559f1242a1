import { setTimeout as sleep } from 'node:timers/promises';
import { isSluiceError } from '@sluice/errors';
import type { LakeTable, LiveFile, SortKey } from '@sluice/lake';
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
  /** Accept a retention under libs/lake's minimum (1 h): tests on a table nothing else uses; the service's config never sets it. */
  readonly unsafeShortRetention?: boolean;
  readonly vacuum: boolean;
  /**
   * Called after each file a compaction writes and each partition a pass compacted (or tried
   * to): liveness counts a pass by its progress, not its length.
   */
  readonly onProgress?: () => void;
  /** Called once the vacuum succeeded (before a partition's failure is thrown). */
  readonly onVacuumed?: () => void;
  /**
   * Share of wall time (1–100 %) a pass spends compacting: after each partition it pauses
   * {@link pauseAfter} of that partition's time. Absent = 100 (tier 2's own silver/gold
   * compaction, which must not delay its folds).
   */
  readonly dutyPercent?: number;
  readonly logger: Logger;
  readonly metrics: SluiceMetrics;
}

/** What one maintenance pass over a table did. */
export interface MaintenanceOutcome {
  readonly partitionsCompacted: number;
  readonly filesRemoved: number;
  readonly conflicts: number;
  readonly filesVacuumed: number;
  /** The deadline came with partitions still to compact (and vacuum not run yet): call again. */
  readonly unfinished: boolean;
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

/** Longest pause between two partitions of a pass. */
export const MAX_COMPACTION_PAUSE_MS = 5_000;

/** The pause after a partition that took `workedMs`, for a duty cycle of `dutyPercent`. */
export function pauseAfter(workedMs: number, dutyPercent = 100): number {
  if (dutyPercent >= 100) return 0;
  return Math.min(MAX_COMPACTION_PAUSE_MS, Math.round((workedMs * (100 - dutyPercent)) / dutyPercent));
}

/**
 * Per-partition compaction and vacuum of one table; with a `deadline` (a `performance.now()`
 * time) it stops between partitions once the deadline has passed and says so. A compaction that loses a race (its files
 * were removed or rewritten meanwhile) is abandoned and re-planned next pass: it is never
 * retried against, and never blocks, a data commit (invariant 7).
 *
 * Its metrics (compacted and vacuumed files, commit duration and outcome, file counts) come from
 * libs/lake's events through libs/telemetry; only `commits{outcome="error"}` is recorded here,
 * because the lake publishes no failure event (docs/design/telemetry.md, "Who records what").
 */
export async function maintainTable(table: LakeTable, options: MaintenanceOptions, sortBy?: readonly SortKey[], deadline?: number): Promise<MaintenanceOutcome> {
  const snap = await table.snapshot();
  const plan = planCompaction(snap.files, snap.partitionColumns, options);
  let filesRemoved = 0;
  let conflicts = 0;
  let partitionsCompacted = 0;
  let pause = 0;
  // A partition that fails (a corrupt or missing file, out of memory) is passed over, not allowed
  // to stop the rest: it is planned first every pass (the most small files), and ended each pass
  // before any other partition, or the vacuum, ran. The first failure is thrown once all ran.
  let failed: unknown;
  for (const [i, p] of plan.entries()) {
    // At least one partition per call, so a slice always makes progress.
    if (i > 0 && deadline !== undefined && performance.now() >= deadline) {
      // Out of time with a partition failed: reported, or the caller took the slice for a success.
      if (failed !== undefined) throw failed;
      return { partitionsCompacted, filesRemoved, conflicts, filesVacuumed: 0, unfinished: true };
    }
    if (pause > 0) await sleep(pause);
    const started = performance.now();
    try {
      const r = await table.compact({ partition: p.partition, targetFileBytes: options.targetFileBytes, smallFileBytes: options.smallFileBytes, sortBy, onFileWritten: options.onProgress });
      if (r.version === undefined) {
        options.onProgress?.();
        continue;
      }
      partitionsCompacted += 1;
      filesRemoved += r.filesRemoved;
      options.logger.info({ table: table.name, version: r.version, partition: p.partition, filesRemoved: r.filesRemoved, filesAdded: r.filesAdded, bytes: r.bytesAdded }, 'compacted');
    } catch (err) {
      if (!isSluiceError(err, 'LAKE_COMMIT_CONFLICT')) {
        // libs/lake publishes no event for a failed (non-conflict) commit: this one is ours.
        options.metrics.commits.add(1, { table: table.name, outcome: 'error' });
        options.logger.warn({ table: table.name, partition: p.partition, err }, 'compaction of a partition failed; the others go on');
        failed ??= err;
      } else {
        // libs/lake already published the conflict (commits{outcome="conflict"}).
        conflicts += 1;
        options.logger.info({ table: table.name, partition: p.partition, err }, 'compaction lost a race; re-planned next pass');
      }
    }
    options.onProgress?.();
    pause = pauseAfter(performance.now() - started, options.dutyPercent);
  }
  let filesVacuumed = 0;
  if (options.vacuum) {
    const v = await table.vacuum({ retentionMs: options.retentionMs, unsafeShortRetention: options.unsafeShortRetention });
    filesVacuumed = v.filesDeleted.length;
    options.onVacuumed?.();
    options.onProgress?.();
    if (filesVacuumed > 0) {
      options.logger.info({ table: table.name, files: filesVacuumed, bytes: v.bytesDeleted }, 'vacuumed');
    }
  }
  if (failed !== undefined) throw failed;
  return { partitionsCompacted, filesRemoved, conflicts, filesVacuumed, unfinished: false };
}
