import { isSluiceError, type SluiceError } from '@sluice/errors';
import { withConnection, sqlStringList } from '../duck';
import { lakeError } from '../errors';
import { publish } from '../events';
import { FileLease } from '../storage/file-lease';
import type { Storage, StoredObject } from '../storage/storage';
import { LAST_CHECKPOINT_KEY, commitKey, partitionValuesOf, versionKeyStem, type AddAction, type CommitActions, type MetadataAction, type ProtocolAction, type RemoveAction, type TxnAction } from './actions';
import { parseCommit } from './commit-file';
import { parseJsonLossless } from './json';
import { Snapshot, checkReadable } from './snapshot';

/** Which version a snapshot should show. Default: the latest. */
export type SnapshotTarget = { version?: number; timestampMs?: number };

const COMMIT_RE = /^_delta_log\/(\d{20})\.json$/;
const CHECKPOINT_RE = /^_delta_log\/(\d{20})\.checkpoint(?:\.(\d+)\.(\d+))?\.parquet$/;

/** The commit and checkpoint files found in `_delta_log`. */
export interface LogListing {
  commits: Map<number, StoredObject>;
  /** Complete checkpoints: version → part keys. */
  checkpoints: Map<number, string[]>;
}

/** Lists the whole log. */
export async function listLog(storage: Storage): Promise<LogListing> {
  return toListing(await storage.list('_delta_log/'));
}

/**
 * Lists only log files at or after `fromVersion`, in blocks of 1000 versions (a key prefix of
 * 17 digits), so a table with 10k commits does not list them all to load its latest version;
 * within the first block, only the keys from `fromVersion` on (a snapshot refreshed after every
 * commit listed, and on local disk stat-ed, up to a thousand older files each time).
 */
export async function listLogFrom(storage: Storage, fromVersion: number): Promise<LogListing> {
  return toListing(await logObjectsFrom(storage, fromVersion, 'from the version'));
}

/**
 * The log objects from `fromVersion`'s block on, in blocks while each ends full; from the
 * version's own first key, or from the start of its block.
 */
async function logObjectsFrom(storage: Storage, fromVersion: number, start: 'from the version' | 'whole block'): Promise<StoredObject[]> {
  const objects: StoredObject[] = [];
  const first = blockOf(fromVersion);
  // Every key of a version starts `<20 digits>.`, then letters or digits: '~' sorts after them all.
  const startAfter = start === 'from the version' && fromVersion > 0 ? `${versionKeyStem(fromVersion - 1)}.~` : undefined;
  for (let block = first; ; block++) {
    const found = await storage.list(blockPrefix(block), block === first && startAfter !== undefined ? { startAfter } : {});
    objects.push(...found);
    const blockEnd = commitKey(block * LOG_BLOCK + LOG_BLOCK - 1);
    if (!found.some((o) => o.key === blockEnd)) break;
  }
  return objects;
}

/**
 * Most log keys one cleanup lists (about five full blocks): cleanup runs inside a data commit, so
 * a log never cleaned, or a retention just shortened, is cleaned over several runs, each bounded.
 */
export const CLEANUP_MAX_KEYS = 10_000;

/**
 * What log cleanup deletes from, without listing a month of commits: the log's objects from its
 * oldest block up through the first block holding an object modified at or after `cutoffMs`, or
 * the block that brings the listing to `maxKeys`. Log files are written in version order, so the
 * blocks above that one are newer still (a late checkpoint, or one file rewritten, only ends the
 * walk early: cleanup then deletes less). An empty block below `latestVersion`'s (a file left
 * behind by an earlier cleanup, below a gap) lists the whole log.
 */
export async function listLogToCutoff(storage: Storage, cutoffMs: number, latestVersion: number, maxKeys = CLEANUP_MAX_KEYS): Promise<StoredObject[]> {
  // Log keys are 20-digit versions; `_last_checkpoint` and temporary files sort apart from them.
  const [oldest] = await storage.list('_delta_log/0', { limit: 1 });
  const version = oldest && /^_delta_log\/(\d{20})\./.exec(oldest.key);
  if (!version) return storage.list('_delta_log/');
  const objects: StoredObject[] = [];
  for (let block = blockOf(Number(version[1])); ; block++) {
    const found = await listBlock(storage, block);
    if (found === undefined) return block <= blockOf(latestVersion) ? storage.list('_delta_log/') : objects;
    objects.push(...found);
    if (objects.length >= maxKeys || found.some((o) => o.modifiedMs >= cutoffMs)) return objects;
  }
}

/** Keys of a log's start {@link logHasEntries} looks at before it lists the whole log. */
const ENTRY_PROBE_KEYS = 10;

/** A commit or checkpoint key: what makes a `_delta_log/` a table's. */
const LOG_ENTRY = /^_delta_log\/\d{20}\.(json|checkpoint.*parquet)$/;

/**
 * Whether the log holds a commit or a checkpoint (a table is there), without listing a month of
 * commits: its first keys by version (a version's `.crc` sorts before its commit, temporary and
 * `_last_checkpoint` files apart from them). Only a log whose first keys are all something else
 * is listed whole.
 */
export async function logHasEntries(storage: Storage): Promise<boolean> {
  const first = await storage.list('_delta_log/0', { limit: ENTRY_PROBE_KEYS });
  if (first.some((o) => LOG_ENTRY.test(o.key))) return true;
  if (first.length < ENTRY_PROBE_KEYS) return false;
  return (await storage.list('_delta_log/')).some((o) => LOG_ENTRY.test(o.key));
}

/** Versions per listing block: the log keys of a block share their first 17 digits. */
const LOG_BLOCK = 1000;

function blockOf(version: number): number {
  return Math.floor(version / LOG_BLOCK);
}

/** The key prefix of a block's log files: its first version's key stem less the last three digits. */
function blockPrefix(block: number): string {
  return versionKeyStem(block * LOG_BLOCK).slice(0, -3);
}

/**
 * The log objects of one block of versions, or undefined when it holds none (the log starts
 * above it, or was cleaned up below).
 */
async function listBlock(storage: Storage, block: number): Promise<StoredObject[] | undefined> {
  if (block < 0) return undefined;
  const found = await storage.list(blockPrefix(block));
  return found.length > 0 ? found : undefined;
}

/**
 * The listing a snapshot at `version` replays, without the whole log (a month of streaming
 * commits is millions of keys): the version's own block and the blocks below it until one holds
 * a checkpoint at or below it or the first commit, or is empty. Each block is looked at alone
 * (work linear in the blocks listed).
 */
async function listLogFor(storage: Storage, version: number): Promise<LogListing> {
  return toListing(await blocksDown(storage, blockOf(version), version));
}

/**
 * The log objects of `fromBlock` and the blocks below it, down to one holding what a snapshot at
 * `version` replays from (a checkpoint at or below it, or the first commit) or an empty block.
 */
async function blocksDown(storage: Storage, fromBlock: number, version: number): Promise<StoredObject[]> {
  const objects: StoredObject[] = [];
  for (let block = fromBlock; ; block--) {
    const found = await listBlock(storage, block);
    if (found === undefined) break;
    objects.push(...found);
    if (replayableAt(toListing(found), version)) break;
  }
  return objects;
}

/** Whether `listing` holds what a snapshot at `version` replays: a checkpoint at or below it, or the log's first commit. */
function replayableAt(listing: LogListing, version: number): boolean {
  if (listing.commits.has(0)) return true;
  for (const v of listing.checkpoints.keys()) if (v <= version) return true;
  return false;
}

/**
 * The listing a snapshot as of `timestampMs` needs: from the newest checkpoint down to a block
 * holding a commit written at or before it (a commit's time is at least its file's mtime), one
 * block more (commit times are forced monotonic over what is listed, so an earlier commit with a
 * later mtime moves the answer only when it is more than a block away), and further down only
 * while no checkpoint lies under the answer.
 */
async function listLogAt(storage: Storage, timestampMs: number): Promise<LogListing> {
  const hinted = await lastCheckpointHint(storage);
  // Whole blocks: the walk down below the hint needs the hinted block's older versions too.
  const objects = hinted === undefined ? [] : await logObjectsFrom(storage, hinted, 'whole block');
  if (hinted === undefined || !toListing(objects).checkpoints.has(hinted)) return listLog(storage); // no hint, or a stale one
  const writtenBy = (found: readonly StoredObject[]) => found.some((o) => o.modifiedMs <= timestampMs && COMMIT_RE.test(o.key));
  let block = blockOf(hinted) - 1;
  const down = async (): Promise<StoredObject[] | undefined> => {
    const found = await listBlock(storage, block--);
    if (found === undefined) block = -1; // nothing below an empty block
    else objects.push(...found);
    return found;
  };
  for (let reached = writtenBy(objects); !reached; ) {
    const found = await down();
    if (found === undefined) break;
    reached = writtenBy(found);
  }
  await down();
  for (;;) {
    const listing = toListing(objects);
    const version = versionAtOrBefore(listing, timestampMs);
    if (version === undefined || replayableAt(listing, version)) return listing;
    if ((await down()) === undefined) return listing;
  }
}

/** The largest of `values`, -1 when there is none (a loop: no spread of a long log onto the stack). */
export function maxOf(values: Iterable<number>): number {
  let max = -1;
  for (const v of values) if (v > max) max = v;
  return max;
}

/**
 * The commits and complete checkpoints among `objects`. A checkpoint is complete as a classic
 * single file, or as a multi-part set whose parts 1..n of one part count n are all there. Parts
 * used to be grouped by version alone, so two part-1 files of different part counts (a writer
 * that crashed partway and retried with another count) passed as a complete 2-part checkpoint.
 */
function toListing(objects: StoredObject[]): LogListing {
  const commits = new Map<number, StoredObject>();
  const classic = new Map<number, string>();
  // version → part count → part number → key
  const parts = new Map<number, Map<number, Map<number, string>>>();
  for (const o of objects) {
    const c = COMMIT_RE.exec(o.key);
    if (c) {
      commits.set(Number(c[1]), o);
      continue;
    }
    const cp = CHECKPOINT_RE.exec(o.key);
    if (!cp) continue;
    const v = Number(cp[1]);
    if (cp[3] === undefined) {
      classic.set(v, o.key);
      continue;
    }
    const [part, total] = [Number(cp[2]), Number(cp[3])];
    if (part < 1 || part > total) continue;
    const byTotal = parts.get(v) ?? new Map<number, Map<number, string>>();
    const set = byTotal.get(total) ?? new Map<number, string>();
    set.set(part, o.key);
    byTotal.set(total, set);
    parts.set(v, byTotal);
  }
  const checkpoints = new Map<number, string[]>();
  for (const [v, key] of classic) checkpoints.set(v, [key]);
  for (const [v, byTotal] of parts) {
    if (checkpoints.has(v)) continue; // a complete classic file is preferred
    for (const [total, set] of byTotal) {
      if (set.size === total) {
        checkpoints.set(v, [...set.keys()].sort((a, b) => a - b).map((p) => set.get(p)!));
        break;
      }
    }
  }
  return { commits, checkpoints };
}

/**
 * Commit timestamps as readers see them: the mtime of each N.json, forced to increase by at
 * least 1 ms per version (DELTA.md §7), in ascending version order.
 */
export function commitTimestamps(listing: LogListing): Array<{ version: number; timestampMs: number }> {
  const versions = [...listing.commits.keys()].sort((a, b) => a - b);
  const out: Array<{ version: number; timestampMs: number }> = [];
  let previous = -Infinity;
  for (const v of versions) {
    const ts = Math.max(listing.commits.get(v)!.modifiedMs, previous + 1);
    out.push({ version: v, timestampMs: ts });
    previous = ts;
  }
  return out;
}

/**
 * Loads a snapshot: newest checkpoint at or below the target, then the JSON commits after it.
 * A gap, a torn commit or an unreadable checkpoint is a typed error naming the file.
 */
export async function loadSnapshot(storage: Storage, target: SnapshotTarget = {}): Promise<Snapshot> {
  let listing: LogListing;
  let version: number;
  if (target.timestampMs === undefined) {
    // Latest or a given version: start listing at the newest checkpoint (per the hint) when it
    // is at or below the target, so a table with 10k commits does not list them all.
    const hinted = await lastCheckpointHint(storage);
    const usable = hinted !== undefined && (target.version === undefined || hinted <= target.version) ? hinted : undefined;
    if (usable !== undefined) {
      listing = await listLogFrom(storage, usable);
      if (!listing.checkpoints.has(usable)) listing = await listLog(storage); // stale hint
    } else if (target.version !== undefined) {
      // A version below the newest checkpoint (or a table without one): its own block and down.
      listing = await listLogFor(storage, target.version);
      if (listing.commits.size === 0 && listing.checkpoints.size === 0) {
        // Nothing there: a version the log no longer (or never) had, if the table exists.
        if (hinted !== undefined) throw lakeError('LAKE_VERSION_NOT_FOUND', `${storage.uri} has no version ${target.version}`, { details: { version: target.version } });
        listing = await listLog(storage); // no checkpoint yet: a short log
      }
    } else {
      listing = await listLog(storage);
    }
    if (listing.commits.size === 0 && listing.checkpoints.size === 0) {
      throw lakeError('LAKE_NOT_FOUND', `no Delta table at ${storage.uri} (empty or missing _delta_log)`, { details: { uri: storage.uri } });
    }
    // A loop, not Math.max(...): spreading a log of 100k+ versions overflowed the call stack.
    version = target.version ?? Math.max(maxOf(listing.commits.keys()), maxOf(listing.checkpoints.keys()));
  } else {
    listing = await listLogAt(storage, target.timestampMs);
    if (listing.commits.size === 0 && listing.checkpoints.size === 0) {
      throw lakeError('LAKE_NOT_FOUND', `no Delta table at ${storage.uri} (empty or missing _delta_log)`, { details: { uri: storage.uri } });
    }
    version = versionAtTimestamp(listing, target.timestampMs, storage.uri);
  }
  return replay(storage, listing, version);
}

async function lastCheckpointHint(storage: Storage): Promise<number | undefined> {
  const body = await storage.getIfExists(LAST_CHECKPOINT_KEY);
  if (body === undefined) return undefined;
  try {
    const hint = parseJsonLossless(Buffer.from(body).toString('utf8')) as { version?: unknown };
    return typeof hint.version === 'number' && Number.isInteger(hint.version) && hint.version >= 0 ? hint.version : undefined;
  } catch {
    return undefined; // the hint is optional: a torn one means "list everything"
  }
}

/** The newest version whose commit time is at or before `timestampMs`, if any. */
function versionAtOrBefore(listing: LogListing, timestampMs: number): number | undefined {
  let found: number | undefined;
  for (const c of commitTimestamps(listing)) if (c.timestampMs <= timestampMs) found = c.version;
  return found;
}

function versionAtTimestamp(listing: LogListing, timestampMs: number, uri: string): number {
  const found = versionAtOrBefore(listing, timestampMs);
  if (found === undefined) {
    throw lakeError('LAKE_VERSION_NOT_FOUND', `${uri} has no commit at or before ${new Date(timestampMs).toISOString()}`, { details: { timestampMs } });
  }
  return found;
}

/** Log state while commits are applied in order. */
class ReplayState {
  protocol: ProtocolAction | undefined;
  metaData: MetadataAction | undefined;
  readonly adds = new Map<string, AddAction>();
  readonly removes = new Map<string, RemoveAction>();
  readonly txns = new Map<string, TxnAction>();

  /** The state of a loaded snapshot (copied: snapshots stay immutable), without tombstones removed at or before `tombstoneCutoffMs`. */
  static of(snapshot: Snapshot, tombstoneCutoffMs: number): ReplayState {
    const state = new ReplayState();
    state.protocol = snapshot.protocol;
    state.metaData = snapshot.metadata;
    for (const f of snapshot.files) state.adds.set(f.path, f.add);
    for (const r of snapshot.tombstones) if ((r.deletionTimestamp ?? 0) > tombstoneCutoffMs) state.removes.set(r.path, r);
    for (const t of snapshot.txnActions()) state.txns.set(t.appId, t);
    return state;
  }

  apply(c: Omit<CommitActions, 'version'>): void {
    if (c.protocol) this.protocol = c.protocol;
    if (c.metaData) this.metaData = c.metaData;
    for (const t of c.txns) this.txns.set(t.appId, t);
    for (const r of c.removes) {
      this.adds.delete(r.path);
      this.removes.set(r.path, r);
    }
    for (const a of c.adds) {
      this.removes.delete(a.path);
      this.adds.set(a.path, a);
    }
  }

  snapshot(version: number, timestampMs: number, uri: string): Snapshot {
    const { protocol, metaData } = this;
    if (!protocol || !metaData) {
      throw lakeError('LAKE_LOG_CORRUPT', `${uri}: no protocol or metaData action up to version ${version}`, { details: { version } });
    }
    checkReadable(protocol, uri);
    return new Snapshot({ version, timestampMs, protocol, metadata: metaData, adds: this.adds.values(), tombstones: this.removes.values(), txns: this.txns });
  }
}

/** Reads commits `from`..`to` (all must be listed; fetched in parallel for S3 latency) and applies them in order. */
async function applyCommits(storage: Storage, listing: LogListing, from: number, to: number, state: ReplayState): Promise<void> {
  const keys: Array<{ v: number; key: string }> = [];
  for (let v = from; v <= to; v++) {
    if (!listing.commits.has(v)) {
      throw lakeError(from === 0 && v === 0 ? 'LAKE_VERSION_NOT_FOUND' : 'LAKE_LOG_CORRUPT', `${storage.uri}: ${commitKey(v)} is missing (gap in the log before version ${to})`, {
        details: { missing: commitKey(v), version: to },
      });
    }
    keys.push({ v, key: commitKey(v) });
  }
  const bodies = await Promise.all(
    keys.map(async ({ key }) => {
      const body = await storage.getIfExists(key);
      if (body === undefined) throw lakeError('LAKE_LOG_CORRUPT', `${storage.uri}: ${key} disappeared while reading`, { details: { key } });
      return body;
    }),
  );
  keys.forEach(({ v, key }, i) => state.apply(parseCommit(v, key, bodies[i])));
}

/**
 * The snapshot at `version`: the newest checkpoint at or below it, then the commits after it.
 * A checkpoint that cannot be read (torn by a writer outside the protocol, a bad disk) is
 * replayed past, as Delta readers do: from the checkpoint before it, or from version 0, while
 * the commits since are there; the log below the listing is listed a block at a time only then.
 * Every load pays for that until a newer checkpoint is written, so each one met is published as
 * a checkpoint failure (the metric and the SluiceCheckpointsFailing alert), named by the
 * table's URI. Commits cleaned up since (a gap) leave the first checkpoint's error as the
 * answer; anything else (a torn commit) is its own answer, as older checkpoints replay it too.
 */
async function replay(storage: Storage, listing: LogListing, version: number): Promise<Snapshot> {
  // The version's time as the listing it was chosen on shows it: a listing extended below by a
  // fallback could force it later (an older commit with a later mtime), past a time asked for.
  const timestampMs = commitTimestamps(listing).find((c) => c.version === version)?.timestampMs ?? listing.commits.get(version)?.modifiedMs ?? 0;
  const exists = listing.commits.has(version) || listing.checkpoints.has(version);
  if (!exists) {
    throw lakeError('LAKE_VERSION_NOT_FOUND', `${storage.uri} has no version ${version}`, { details: { version } });
  }
  let unreadable: { version: number; err: SluiceError } | undefined;
  for (let cpVersion = newestCheckpoint(listing, version); ; ) {
    let checkpoint: Omit<CommitActions, 'version'> | undefined;
    try {
      if (cpVersion >= 0) checkpoint = await readCheckpoint(storage, listing.checkpoints.get(cpVersion)!);
    } catch (err) {
      if (!isSluiceError(err, 'LAKE_LOG_CORRUPT')) throw err;
      publish('checkpointFailed', { table: storage.uri, version: cpVersion, code: err.code, message: err.message });
      unreadable ??= { version: cpVersion, err };
      listing = await withLogBelow(storage, listing, cpVersion);
      cpVersion = newestCheckpoint(listing, cpVersion - 1);
      continue;
    }
    try {
      return await replayOnto(storage, listing, version, timestampMs, cpVersion, checkpoint);
    } catch (err) {
      throw unreadable !== undefined && missingAtOrBelow(err, unreadable.version) ? unreadable.err : err;
    }
  }
}

/**
 * Whether `err` is a gap in the log at or below `version`: commits cleaned up under a checkpoint,
 * before the replay listed them (`missing`) or while it read them (`key`).
 */
function missingAtOrBelow(err: unknown, version: number): boolean {
  if (!isSluiceError(err)) return false;
  const key = err.details.missing ?? err.details.key;
  const m = typeof key === 'string' ? COMMIT_RE.exec(key) : null;
  return m !== null && Number(m[1]) <= version;
}

/** The newest complete checkpoint at or below `version`, -1 when there is none. */
function newestCheckpoint(listing: LogListing, version: number): number {
  let newest = -1;
  for (const v of listing.checkpoints.keys()) if (v <= version && v > newest) newest = v;
  return newest;
}

/**
 * `listing` with the log blocks below it added, down to one holding a checkpoint below
 * `version` or the first commit (or an empty block): what a replay past the checkpoint at
 * `version` reads.
 */
async function withLogBelow(storage: Storage, listing: LogListing, version: number): Promise<LogListing> {
  if (replayableAt(listing, version - 1)) return listing;
  const lowest = Math.min(minOf(listing.commits.keys()), minOf(listing.checkpoints.keys()));
  // A listing that starts inside a block (from a version) holds only its upper part: that block
  // is listed again, whole.
  const below = toListing(await blocksDown(storage, lowest % LOG_BLOCK === 0 ? blockOf(lowest) - 1 : blockOf(lowest), version - 1));
  return { commits: new Map([...below.commits, ...listing.commits]), checkpoints: new Map([...below.checkpoints, ...listing.checkpoints]) };
}

/** The smallest of `values`, Infinity when there is none. */
function minOf(values: Iterable<number>): number {
  let min = Infinity;
  for (const v of values) if (v < min) min = v;
  return min;
}

/** The snapshot at `version`: `checkpoint` (the one at `cpVersion`, none when -1), then the commits after it. */
async function replayOnto(storage: Storage, listing: LogListing, version: number, timestampMs: number, cpVersion: number, checkpoint: Omit<CommitActions, 'version'> | undefined): Promise<Snapshot> {
  const state = new ReplayState();
  if (checkpoint) state.apply(checkpoint);
  await applyCommits(storage, listing, cpVersion + 1, version, state);
  return state.snapshot(version, timestampMs, storage.uri);
}

/**
 * The latest snapshot, given an earlier one of the same table: commits are immutable, so the
 * state at `base` plus the commits after it is the state now, and only those are read (no
 * checkpoint). Returns `base` itself when nothing was committed since. Falls back to a full
 * {@link loadSnapshot} when the commits after `base` are no longer all there (log cleanup ran
 * past it), and when `base`'s own commit is gone: listing starts at it because cleanup that
 * removed a whole block of 1000 versions past `base` left nothing to list there, and `base` was
 * returned as the latest. A handle idle through such a cleanup then committed on top of it into
 * the deleted versions, where no reader looks, and its vacuum deleted files live since. A `base`
 * commit newer than `base` itself (a table created again at the same place) reloads in full too.
 * Tombstones of `base` removed at or before `tombstoneCutoffMs` are left out, as a checkpoint
 * leaves them out (a full load from one holds only those since).
 */
export async function loadSnapshotAfter(storage: Storage, base: Snapshot, tombstoneCutoffMs = -Infinity): Promise<Snapshot> {
  const listing = await listLogFrom(storage, base.version);
  // `base`'s commit gone, or written after `base` was read (its time is at least that file's
  // modification time): the table was dropped and created again here, and commits on top of
  // `base` would mix two tables.
  const baseCommit = listing.commits.get(base.version);
  if (baseCommit === undefined || baseCommit.modifiedMs > base.timestampMs) return loadSnapshot(storage);
  let latest = base.version;
  while (listing.commits.has(latest + 1)) latest++;
  const newer = [...listing.commits.keys()].some((v) => v > latest) || [...listing.checkpoints.keys()].some((v) => v > latest);
  if (newer) return loadSnapshot(storage); // a gap after base: cleaned up, or not ours to patch
  if (latest === base.version) return base;
  const state = ReplayState.of(base, tombstoneCutoffMs);
  await applyCommits(storage, listing, base.version + 1, latest, state);
  // The monotonised commit time, continued from base's as commitTimestamps does.
  let timestampMs = base.timestampMs;
  for (let v = base.version + 1; v <= latest; v++) timestampMs = Math.max(listing.commits.get(v)!.modifiedMs, timestampMs + 1);
  return state.snapshot(latest, timestampMs, storage.uri);
}

/**
 * Whether a classic checkpoint opens as Parquet: its footer and row count, not its rows (log
 * cleanup asks before deleting below it; reading every row there held up the commit that
 * triggered the cleanup). False on any failure, storage errors included: the caller keeps more.
 */
export async function checkpointOpens(storage: Storage, keys: string[]): Promise<boolean> {
  try {
    await queryCheckpoint(storage, keys, (files) => `SELECT count(*) FROM read_parquet(${files})`);
    return true;
  } catch {
    return false;
  }
}

/**
 * The rows of `sql` (given the checkpoint's files as a DuckDB list) as text; the files' local
 * copies stay in the S3 file cache until DuckDB has read them.
 */
async function queryCheckpoint(storage: Storage, keys: string[], sql: (files: string) => string): Promise<string[]> {
  return FileLease.holding(async () => {
    const paths = await Promise.all(keys.map((k) => storage.localPath(k)));
    return withConnection(async (conn) => (await conn.runAndReadAll(sql(sqlStringList(paths)))).getRows().map((r) => String(r[0])));
  });
}

/** Reads a classic (V1, possibly multi-part) checkpoint through DuckDB. */
export async function readCheckpoint(storage: Storage, keys: string[]): Promise<Omit<CommitActions, 'version'>> {
  const out: Omit<CommitActions, 'version'> = { adds: [], removes: [], txns: [] };
  let rows: string[];
  try {
    rows = await queryCheckpoint(storage, keys, (files) => `SELECT to_json(t)::VARCHAR FROM read_parquet(${files}, union_by_name=true) t`);
  } catch (cause) {
    if (isSluiceError(cause) && cause.code !== 'LAKE_QUERY_FAILED') throw cause;
    throw lakeError('LAKE_LOG_CORRUPT', `${storage.uri}: checkpoint ${keys.join(', ')} is unreadable`, { cause, details: { keys } });
  }
  for (const row of rows) {
    const r = parseJsonLossless(row) as Record<string, unknown>;
    if (r.protocol) out.protocol = r.protocol as ProtocolAction;
    if (r.metaData) {
      const md = r.metaData as MetadataAction;
      md.partitionColumns ??= [];
      md.configuration ??= {};
      md.format ??= { provider: 'parquet', options: {} };
      out.metaData = md;
    }
    if (r.txn) out.txns.push(r.txn as TxnAction);
    if (r.add) {
      const add = r.add as AddAction;
      add.partitionValues = partitionValuesOf(add.partitionValues);
      add.size = Number(add.size);
      out.adds.push(add);
    }
    if (r.remove) out.removes.push(r.remove as RemoveAction);
  }
  return out;
}
