import type { LiveFile, Snapshot } from '@sluice/lake';

/** A number from a stats value (number, bigint, or ISO timestamp string), or undefined. */
function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}

/**
 * A file filter keeping files whose `[min, max]` stats of `column` may overlap `[lo, hi]`
 * (numbers; timestamps as epoch ms). Files without usable stats are kept: skipping is only
 * ever an optimisation, never a filter of correctness.
 */
export function overlapping(snapshot: Snapshot, column: string, lo: number, hi: number): (file: LiveFile) => boolean {
  return (file) => {
    const stats = snapshot.stats(file);
    const min = asNumber(stats?.minValues?.[column]);
    const max = asNumber(stats?.maxValues?.[column]);
    if (min === undefined || max === undefined) return true;
    return min <= hi && max >= lo;
  };
}

/** Both filters must keep the file. */
export function both(a: (f: LiveFile) => boolean, b: (f: LiveFile) => boolean): (f: LiveFile) => boolean {
  return (f) => a(f) && b(f);
}

/** Max of a column's max stats over files (epoch ms for timestamps), or undefined. */
export function maxOfStats(snapshot: Snapshot, files: readonly LiveFile[], column: string): number | undefined {
  let out: number | undefined;
  for (const f of files) {
    const v = asNumber(snapshot.stats(f)?.maxValues?.[column]);
    if (v !== undefined && (out === undefined || v > out)) out = v;
  }
  return out;
}

/** A chunk of {@link newestFirstChunks}: its files and the largest `column` value among them. */
export interface FileChunk {
  readonly files: LiveFile[];
  readonly newest: number;
}

/**
 * The files `keep` keeps, newest first by their largest `column` value (files without stats
 * first), cut into chunks of at most `maxBytes` (a larger file alone). On S3 a read pins its files
 * in a bounded cache: a read of a table's history in one piece passed that bound and failed on
 * every retry; callers read chunk by chunk and stop once a chunk is older than what they need.
 */
export function newestFirstChunks(snapshot: Snapshot, keep: (file: LiveFile) => boolean, column: string, maxBytes: number): FileChunk[] {
  const sorted = snapshot.files
    .filter(keep)
    .map((file) => ({ file, newest: maxOfStats(snapshot, [file], column) ?? Infinity }))
    .sort((a, b) => b.newest - a.newest);
  const chunks: { files: LiveFile[]; newest: number; bytes: number }[] = [];
  for (const { file, newest } of sorted) {
    const last = chunks.at(-1);
    if (last && last.bytes + file.size <= maxBytes) {
      last.files.push(file);
      last.bytes += file.size;
    } else {
      chunks.push({ files: [file], newest, bytes: file.size });
    }
  }
  return chunks.map(({ files, newest }) => ({ files, newest }));
}

/** Runs of consecutive windows (each `w` long, sorted starts) as inclusive `[lo, hi]` epoch-ms spans. */
export function windowRuns(windows: readonly number[], w: number): [number, number][] {
  const runs: [number, number][] = [];
  for (const start of windows) {
    const last = runs[runs.length - 1];
    if (last && start <= last[1] + 1) last[1] = Math.max(last[1], start + w - 1);
    else runs.push([start, start + w - 1]);
  }
  return runs;
}

/** A bronze offset range of one Kafka partition: `(from, to]`. */
export interface OffsetRange {
  readonly partition: number;
  readonly from: number;
  readonly to: number;
}

/**
 * `ranges` with each `to` lowered so that the bronze files they read fit `maxBytes` in all, each
 * range an equal share. A range reads every file of its partition whose offsets may lie in it,
 * so `to` stops just below the smallest offset of the first file (by smallest offset) past the
 * share; every row up to the new `to` is in a file before it. A range always moves forward:
 * files it cannot leave out for that are read even past the share (on S3 a read that passes the
 * cache's bound fails on every retry, so a step must stay within it, and a step must still
 * make progress). Files without offset stats are read whatever `to` is and count against nothing.
 */
export function rangesWithinBytes(snapshot: Snapshot, ranges: readonly OffsetRange[], maxBytes: number, partitionColumn: string, offsetColumn: string): OffsetRange[] {
  if (!Number.isFinite(maxBytes) || ranges.length === 0) return [...ranges];
  const share = maxBytes / ranges.length;
  return ranges.map((r) => {
    const inPartition = overlapping(snapshot, partitionColumn, r.partition, r.partition);
    const files = snapshot.files
      .filter((f) => inPartition(f))
      .map((f) => {
        const stats = snapshot.stats(f);
        return { size: f.size, min: asNumber(stats?.minValues?.[offsetColumn]), max: asNumber(stats?.maxValues?.[offsetColumn]) };
      })
      .filter((f): f is { size: number; min: number; max: number } => f.min !== undefined && f.max !== undefined && f.min <= r.to && f.max > r.from)
      .sort((a, b) => a.min - b.min);
    let bytes = 0;
    for (const f of files) {
      if (bytes + f.size > share && f.min - 1 > r.from) return { ...r, to: Math.min(r.to, f.min - 1) };
      bytes += f.size;
    }
    return r;
  });
}

/** Txn versions of `prefix<topic>-<partition>` appIds, by partition. */
export function partitionTxns(snapshot: Snapshot, prefix: string, topic: string): Map<number, number> {
  const out = new Map<number, number>();
  const head = `${prefix}${topic}-`;
  for (const [appId, version] of snapshot.txnVersions()) {
    if (!appId.startsWith(head)) continue;
    const p = Number(appId.slice(head.length));
    if (Number.isInteger(p) && p >= 0) out.set(p, Number(version));
  }
  return out;
}
