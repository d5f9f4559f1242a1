import { randomUUID } from 'node:crypto';
import { isRetryable, isSluiceError } from '@sluice/errors';
import { lakeError } from '../errors';
import { publish } from '../events';
import { commitKey, type Action, type CommitActions } from '../log/actions';
import { parseCommit, serializeCommit } from '../log/commit-file';
import type { Storage } from '../storage/storage';

/** What a writer read and wants to commit; the conflict checks of DELTA.md §6 use it. */
export interface CommitPlan {
  operation: string;
  operationParameters?: Record<string, unknown>;
  /** Actions other than commitInfo. */
  actions: Action[];
  /** Pure append of new files (no removes, nothing read): never conflicts with other appends. */
  isBlindAppend: boolean;
  /**
   * Partitions (JSON arrays of partition values) whose data this commit's outcome depends on;
   * 'all' for unpartitioned reads. Non-blind data-changing adds there by a winner conflict.
   */
  readPartitions?: Set<string> | 'all';
  /** Paths (add.path) of files read; a winner removing one conflicts. */
  readFiles?: ReadonlySet<string>;
  /**
   * Txn versions (null = absent) this commit requires of the table, per appId. The caller checks
   * them against the snapshot it read; {@link commit} checks every winning commit it retries past.
   */
  expectedTxns?: ReadonlyMap<string, bigint | null>;
  /** Engine-specific commitInfo fields (e.g. operationMetrics). */
  extraCommitInfo?: Record<string, unknown>;
}

/** A landed commit. */
export interface CommitResult {
  version: number;
  /** Attempts made (1 when no one raced). */
  attempts: number;
  durationMs: number;
}

const ENGINE_INFO = 'sluice-lake/0.1';

/**
 * Commits `plan` at `readVersion + 1` with put-if-absent; when another writer won that version,
 * checks its actions, and those of every commit after it already there, against the plan, and
 * puts at the first free version if none conflicts. `maxAttempts` bounds the puts that lose a
 * race, not the versions passed. Conflicts are LAKE_COMMIT_CONFLICT (re-read and re-plan).
 */
export async function commit(
  storage: Storage,
  table: string,
  readVersion: number,
  partitionColumns: readonly string[],
  plan: CommitPlan,
  maxAttempts: number,
): Promise<CommitResult> {
  const started = performance.now();
  const txnId = randomUUID();
  const removes = new Set(plan.actions.flatMap((a) => ('remove' in a ? [a.remove.path] : [])));
  const appIds = new Set(plan.actions.flatMap((a) => ('txn' in a ? [a.txn.appId] : [])));
  let version = readVersion + 1;
  for (let attempt = 1; ; attempt++) {
    const commitInfo = {
      timestamp: Date.now(),
      operation: plan.operation,
      operationParameters: plan.operationParameters ?? {},
      ...(readVersion >= 0 ? { readVersion } : {}), // delta-rs parses it as unsigned
      isolationLevel: 'WriteSerializable',
      isBlindAppend: plan.isBlindAppend,
      engineInfo: ENGINE_INFO,
      txnId,
      ...plan.extraCommitInfo,
    };
    const body = serializeCommit([{ commitInfo }, ...plan.actions]);
    let created: boolean;
    let found: Uint8Array | undefined;
    try {
      created = await storage.putIfAbsent(commitKey(version), body);
    } catch (err) {
      // An answer that failed in transit (retryable) or could not be read may hide a success: the
      // entry decides below (DELTA.md §6). A definite refusal (403, a bad key) stands at once.
      if (!isRetryable(err) && !isSluiceError(err, 'LAKE_STORAGE_FAILED')) throw err;
      found = await landedAfterError(storage, commitKey(version));
      if (found === undefined) throw err;
      created = false;
    }
    const winner = created ? undefined : parseCommit(version, commitKey(version), found ?? (await storage.get(commitKey(version))));
    // The entry found can be this commit's own: a put that landed and lost its answer, then was
    // retried (an S3 client retries a 5xx by itself, and the retry's If-None-Match finds it).
    if (winner === undefined || winner.commitInfo?.txnId === txnId) {
      const durationMs = performance.now() - started;
      publish('commit', {
        table,
        version,
        operation: plan.operation,
        actions: countActions(plan.actions),
        attempts: attempt,
        durationMs,
      });
      return { version, attempts: attempt, durationMs };
    }
    passWinner(version, winner, 'retry');
    if (attempt >= maxAttempts) {
      throw lakeError('LAKE_COMMIT_CONFLICT', `${table}: ${plan.operation} gave up after ${attempt} attempts (versions kept being taken)`, {
        details: { readVersion, lastVersion: version },
      });
    }
    // Catch up with the commits already there before the next put, each checked once: a long
    // write (a compaction uploading for seconds) met a commit a second from tier 1, spent an
    // attempt on each version in between, and gave up after 15 without a single real race.
    for (version++; ; version++) {
      const next = await storage.getIfExists(commitKey(version));
      if (next === undefined) break;
      passWinner(version, parseCommit(version, commitKey(version), next));
    }
  }

  /**
   * Throws when `winner`, the commit at `version`, moved an expected txn or conflicts with the
   * plan. `retry`: the put at `version` lost to it (published as a retry, the
   * `commits{outcome="retry"}` metric); a version merely passed on the way publishes only a conflict.
   */
  function passWinner(version: number, winner: CommitActions, lost?: 'retry'): void {
    // Checked before the ordinary conflicts: a moved txn is not retryable, a plain conflict is.
    const moved = plan.expectedTxns ? txnMismatch(winner.txns, plan.expectedTxns) : undefined;
    if (moved) {
      publish('conflict', { table, version, operation: plan.operation, outcome: 'txn mismatch' });
      throw lakeError('LAKE_TXN_MISMATCH', `${table}: ${plan.operation} expected txn ${JSON.stringify(moved.appId)} at ${String(moved.expected)} but version ${version} moved it to ${String(moved.actual)}`, {
        details: { readVersion, winnerVersion: version, appId: moved.appId, expected: String(moved.expected), actual: String(moved.actual) },
      });
    }
    const conflict = findConflict(winner, plan, removes, appIds, partitionColumns);
    if (conflict !== undefined || lost !== undefined) publish('conflict', { table, version, operation: plan.operation, outcome: conflict ?? 'retry' });
    if (conflict) {
      throw lakeError('LAKE_COMMIT_CONFLICT', `${table}: ${plan.operation} read version ${readVersion} but version ${version} (${String(winner.commitInfo?.operation ?? 'unknown')}) conflicts: ${conflict}`, {
        details: { readVersion, winnerVersion: version, conflict },
      });
    }
  }
}

/** Waits between the looks for a commit entry after a failed put (ms). */
const LANDED_CHECKS_MS = [0, 250, 1000];

/**
 * The commit entry at `key` after its put failed, or undefined. A put the server completes after
 * the client gave up (a timeout) can land after a single look found nothing, and the caller's
 * retry then committed the same actions again at the next version; a put whose answer could not
 * be read (not retryable) was not looked for at all. Looks a few times over about a second; a
 * look that fails retryably (the same outage) is followed by the next, any other ends the search,
 * and the put's own error stands.
 */
async function landedAfterError(storage: Storage, key: string): Promise<Uint8Array | undefined> {
  for (const waitMs of LANDED_CHECKS_MS) {
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    try {
      const found = await storage.getIfExists(key);
      if (found !== undefined) return found;
    } catch (lookErr) {
      if (!isRetryable(lookErr)) return undefined;
    }
  }
  return undefined;
}

/** A txn (as a snapshot or a winning commit holds it) that contradicts `expected`. */
export interface TxnMismatch {
  appId: string;
  expected: bigint | null;
  actual: bigint | null;
}

/**
 * The first appId of `expected` whose version in `txns` differs (an appId missing from `txns` is
 * not a mismatch: for a winning commit it means the winner did not touch it).
 */
export function txnMismatch(txns: ReadonlyArray<{ appId: string; version: number | bigint }>, expected: ReadonlyMap<string, bigint | null>): TxnMismatch | undefined {
  for (const t of txns) {
    if (!expected.has(t.appId)) continue;
    const want = expected.get(t.appId)!;
    const actual = BigInt(t.version);
    if (want === null || actual !== want) return { appId: t.appId, expected: want, actual };
  }
  return undefined;
}

/** The first conflict between a winning commit and our plan (DELTA.md §6), or undefined. */
function findConflict(
  winner: CommitActions,
  plan: CommitPlan,
  ourRemoves: ReadonlySet<string>,
  ourAppIds: ReadonlySet<string>,
  partitionColumns: readonly string[],
): string | undefined {
  if (winner.protocol) return 'the winner changed the protocol';
  if (winner.metaData) return 'the winner changed the table metadata (schema or properties)';
  for (const t of winner.txns) if (ourAppIds.has(t.appId)) return `the winner wrote txn for appId ${JSON.stringify(t.appId)} (concurrent transaction)`;
  for (const r of winner.removes) {
    if (ourRemoves.has(r.path)) return `both remove ${r.path} (concurrent delete-delete)`;
    if (plan.readFiles?.has(r.path)) return `the winner removed ${r.path}, which this commit read (concurrent delete-read)`;
  }
  const winnerBlind = winner.commitInfo?.isBlindAppend === true;
  if (!winnerBlind && plan.readPartitions) {
    for (const a of winner.adds) {
      if (!a.dataChange) continue;
      const key = JSON.stringify(partitionColumns.map((c) => a.partitionValues?.[c] ?? null));
      if (plan.readPartitions === 'all' || plan.readPartitions.has(key)) return `the winner added ${a.path} in a partition this commit read (concurrent append)`;
    }
  }
  return undefined;
}

function countActions(actions: readonly Action[]) {
  const n = { add: 0, remove: 0, txn: 0, metaData: 0, protocol: 0 };
  for (const a of actions) {
    if ('add' in a) n.add++;
    else if ('remove' in a) n.remove++;
    else if ('txn' in a) n.txn++;
    else if ('metaData' in a) n.metaData++;
    else if ('protocol' in a) n.protocol++;
  }
  return n;
}
