import { queryError } from '../errors';
import type { WaitFor } from '../query/query-types';
import { notOlderThan, type LakePort, type TableSnapshot } from './lake-port';

/**
 * The latest snapshot per table, re-read at most every `refreshMs` and loaded once for all
 * concurrent callers: a hundred polling dashboards cost one log read per interval, not a hundred.
 */
export class SnapshotTracker {
  private readonly latestByTable = new Map<string, { snapshot: TableSnapshot; loadedAt: number }>();
  private readonly loading = new Map<string, Promise<TableSnapshot>>();

  constructor(
    private readonly lake: LakePort,
    private readonly refreshMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The latest snapshot no older than `maxAgeMs`. A snapshot up to four refresh intervals old is
   * served at once while a reload runs in the background, so a request never waits for the log
   * read of a routine refresh; older than that (or `maxAgeMs` 0, as read-your-writes asks) waits.
   * `maxAgeMs` 0 always reads the log: a snapshot loaded earlier in the same millisecond was
   * served as fresh, so a commit landing in that millisecond went unseen.
   */
  async latest(table: string, maxAgeMs = this.refreshMs): Promise<TableSnapshot> {
    const known = this.latestByTable.get(table);
    const age = known ? this.now() - known.loadedAt : Infinity;
    if (known && maxAgeMs > 0 && age <= maxAgeMs) return known.snapshot;
    const pending = this.reload(table);
    if (known && maxAgeMs > 0 && age <= 4 * maxAgeMs) {
      pending.catch(() => undefined); // the next request that must wait will see the error
      return known.snapshot;
    }
    return pending;
  }

  private reload(table: string): Promise<TableSnapshot> {
    let pending = this.loading.get(table);
    if (!pending) {
      const known = this.latestByTable.get(table);
      const load = async (): Promise<TableSnapshot> => {
        if (known && !(await this.lake.changedSince(known.snapshot))) return known.snapshot;
        return this.lake.latest(table);
      };
      pending = load().then(
        (snapshot) => {
          const prev = this.latestByTable.get(table);
          // Never step back: a slow load started earlier must not replace a newer snapshot. A table
          // created again under the name (another id) starts its versions over.
          if (!prev || prev.snapshot === snapshot || notOlderThan(snapshot, prev.snapshot)) {
            this.latestByTable.set(table, { snapshot, loadedAt: this.now() });
          }
          this.loading.delete(table);
          return this.latestByTable.get(table)!.snapshot;
        },
        (err: unknown) => {
          this.loading.delete(table);
          throw err;
        },
      );
      this.loading.set(table, pending);
    }
    return pending;
  }

  /**
   * Loads the latest snapshot of each table before the instance takes traffic, so the first
   * dashboards after a rollout do not each wait on a cold log read. Waits at most `withinMs`;
   * returns the tables not loaded by then, with why (a table not created yet is one: requests
   * load it when it exists). Never throws: readiness must not hang on one table.
   */
  async warm(tables: readonly string[], withinMs: number): Promise<Array<{ table: string; reason: string }>> {
    const failed = new Map<string, string>();
    const loaded = new Set<string>();
    const loads = tables.map((table) =>
      this.latest(table).then(
        () => void loaded.add(table),
        (err: unknown) => void failed.set(table, reasonOf(err)),
      ),
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
    await Promise.race([Promise.all(loads), deadline]);
    clearTimeout(timer);
    return tables.filter((t) => !loaded.has(t)).map((table) => ({ table, reason: failed.get(table) ?? `not loaded within ${withinMs} ms` }));
  }

  /**
   * Read-your-writes: the latest snapshot once it has `wait.version` and every `wait.offsets`
   * appId at or past its offset, polling the log; QUERY_WAIT_TIMEOUT after `wait.timeoutMs`.
   */
  async waitFor(table: string, wait: WaitFor, defaultTimeoutMs: number): Promise<TableSnapshot> {
    const deadline = this.now() + (wait.timeoutMs ?? defaultTimeoutMs);
    let delay = 20;
    let snapshot = await this.latest(table);
    while (!reached(snapshot, wait)) {
      if (this.now() >= deadline) {
        throw queryError('QUERY_WAIT_TIMEOUT', `table ${table} is at version ${snapshot.version}`, {
          version: snapshot.version,
          offsets: pick(snapshot.txns, Object.keys(wait.offsets ?? {})),
          wanted: { version: wait.version, offsets: wait.offsets },
        });
      }
      await sleep(Math.min(delay, Math.max(1, deadline - this.now())));
      delay = Math.min(delay * 2, 200);
      snapshot = await this.latest(table, 0);
    }
    return snapshot;
  }
}

/** True when `snapshot` satisfies a read-your-writes request. */
export function reached(snapshot: TableSnapshot, wait: WaitFor): boolean {
  if (wait.version !== undefined && snapshot.version < wait.version) return false;
  for (const [appId, offset] of Object.entries(wait.offsets ?? {})) {
    const have = txnOf(snapshot.txns, appId);
    if (have === undefined || have < offset) return false;
  }
  return true;
}

/** The txn version of `appId`: own entries only (`toString` or `__proto__` are app ids like any other). */
function txnOf(txns: Record<string, number>, appId: string): number | undefined {
  return Object.hasOwn(txns, appId) ? txns[appId] : undefined;
}

function pick(txns: Record<string, number>, keys: string[]): Record<string, number | null> {
  return Object.fromEntries(keys.map((k) => [k, txnOf(txns, k) ?? null]));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Why a table did not load, for the start-up warning: the code, and the lake's code behind it. */
function reasonOf(err: unknown): string {
  const e = err as { code?: unknown; details?: { cause?: unknown } } | null | undefined;
  if (typeof e?.code !== 'string') return String(err);
  return typeof e.details?.cause === 'string' ? `${e.code} (${e.details.cause})` : e.code;
}
