import { toColumns, type AnyContract } from '@sluice/contracts';
import type { LakeQueryEngine, LakeTable, Snapshot } from '@sluice/lake';
import { isSluiceError } from '@sluice/errors';
import { mergeError } from '../errors';
import { contractColumns, BUCKET, EVENT_DATE, INGESTED_AT, KAFKA_OFFSET, KAFKA_PARTITION, KEY_HASH, PRODUCED_AT } from '../tables/layout';
import { both, maxOfStats, newestFirstChunks, overlapping } from '../tables/pruning';
import type { TableSet } from '../tables/table-set';
import type { BronzeRecord } from './bronze-record';
import type { BronzeStore, BucketedKey, PartitionCommit } from './bronze-store';
import type { DedupKey } from './dedup-window';

/** Event times further apart than this start a new bronze lookup (see `committedEventIds`). */
const LOOKUP_CLUSTER_GAP_MS = 3_600_000;

/**
 * `keys` sorted by event time and cut wherever two neighbours are more than `gapMs` apart: each
 * cluster spans only the times its own keys have.
 */
export function timeClusters<K extends DedupKey>(keys: readonly K[], gapMs: number): K[][] {
  const sorted = [...keys].sort((a, b) => a.eventTimeMs - b.eventTimeMs);
  const clusters: K[][] = [];
  for (const k of sorted) {
    const last = clusters.at(-1);
    if (last !== undefined && k.eventTimeMs - last[last.length - 1].eventTimeMs <= gapMs) last.push(k);
    else clusters.push([k]);
  }
  return clusters;
}

/** {@link BronzeStore} over libs/lake tables. */
export class LakeBronzeStore implements BronzeStore {
  constructor(
    private readonly tables: TableSet,
    private readonly engine: LakeQueryEngine,
    private readonly now: () => number = Date.now,
    /** Most bronze bytes one read may hold in the table's file cache (S3); Infinity: no bound. */
    private readonly maxReadBytes = Infinity,
  ) {}

  async writtenOffsets(contract: AnyContract, appIds: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const table = await this.tables.existing(contract.tables.bronze);
    if (!table) return out;
    const snap = await table.snapshot();
    for (const appId of appIds) {
      const v = snap.txnVersion(appId);
      if (v !== undefined) out.set(appId, Number(v));
    }
    return out;
  }

  async recentEventIds(contract: AnyContract, partition: number, watermarkMs: number, limit: number): Promise<{ ids: DedupKey[]; truncated: boolean }> {
    const table = await this.tables.existing(contract.tables.bronze);
    if (!table) return { ids: [], truncated: false };
    const snap = await table.snapshot();
    const ofPartition = overlapping(snap, KAFKA_PARTITION, partition, partition);
    // The window's edge stops at the wall clock, as the window's own does (DedupWindow): one
    // event dated years ahead made the rebuild read that event alone and cover none of the rest.
    const now = this.now();
    const newestInBronze = maxOfStats(snap, snap.files.filter(ofPartition), 'event_time');
    if (newestInBronze === undefined) return { ids: [], truncated: false };
    const newest = Math.min(newestInBronze, now);
    // The files that may hold ids within the watermark, read newest first in chunks the cache can
    // hold; each chunk gives its newest `wanted` ids of the partition, the best `wanted` are kept.
    const wanted = Math.min(limit, Number.MAX_SAFE_INTEGER - 1) + 1; // one past the limit tells whether there were more
    let rows: Record<string, unknown>[] = [];
    for (const chunk of newestFirstChunks(snap, both(ofPartition, overlapping(snap, 'event_time', newest - watermarkMs, Infinity)), 'event_time', this.maxReadBytes)) {
      // Sorted newest first: once `wanted` ids are held, a chunk older than all of them adds none.
      if (rows.length >= wanted && chunk.newest < Number(rows[rows.length - 1].t)) break;
      const paths = new Set(chunk.files.map((f) => f.path));
      const session = await this.engine.open({ bronze: { storage: table.storage, snapshot: snap, files: (f) => paths.has(f.path) } });
      try {
        const found = await session.query(`SELECT event_id, epoch_ms(event_time) AS t FROM bronze WHERE ${KAFKA_PARTITION} = $p ORDER BY t DESC LIMIT $n`, { p: partition, n: wanted });
        rows = [...rows, ...found].sort((a, b) => Number(b.t) - Number(a.t)).slice(0, wanted);
      } finally {
        session.close();
      }
    }
    // Within the watermark of the partition's own newest event (the first row: every chunk gave its newest).
    const horizon = rows.length > 0 ? Math.min(Number(rows[0].t), now) - watermarkMs : 0;
    rows = rows.filter((r) => Number(r.t) >= horizon);
    const truncated = rows.length > limit;
    return { ids: rows.slice(0, limit).map((r) => ({ eventId: String(r.event_id), eventTimeMs: Number(r.t) })), truncated };
  }

  async committedEventIds(contract: AnyContract, candidates: readonly BucketedKey[]): Promise<Set<string>> {
    const found = new Set<string>();
    const table = await this.tables.existing(contract.tables.bronze);
    if (!table || candidates.length === 0) return found;
    const snap = await table.snapshot();
    // One lookup per cluster of nearby event times: a DLQ replay from days ago beside records of
    // the last minutes would otherwise make one range over every file in between.
    for (const cluster of timeClusters(candidates, LOOKUP_CLUSTER_GAP_MS)) {
      for (const id of await this.lookUp(table, snap, cluster)) found.add(id);
    }
    return found;
  }

  /** The event ids of `candidates` (one cluster of nearby event times) that bronze holds. */
  private async lookUp(table: LakeTable, snap: Snapshot, candidates: readonly BucketedKey[]): Promise<string[]> {
    const lo = candidates[0].eventTimeMs;
    const hi = candidates[candidates.length - 1].eventTimeMs;
    // Every copy of an event has its event time and its bucket (bronze's partition column): only
    // files of those buckets and that time range.
    const buckets = new Set(candidates.map((k) => String(k.bucket)));
    const files = both((f) => buckets.has(f.partitionValues[BUCKET] ?? ''), overlapping(snap, 'event_time', lo, hi));
    if (snap.files.every((f) => !files(f))) return [];
    const session = await this.engine.open({ bronze: { storage: table.storage, snapshot: snap, files } });
    try {
      // (id, event time) pairs travel as one JSON parameter, never as SQL text; a copy of an
      // event has its event time, as the in-memory window assumes too.
      const rows = await session.query(
        `WITH c AS (SELECT u.id AS id, u.t AS t FROM (SELECT unnest(from_json($c, '[{"id":"VARCHAR","t":"BIGINT"}]')) AS u))
         SELECT DISTINCT b.event_id FROM bronze b JOIN c ON b.event_id = c.id AND epoch_ms(b.event_time) = c.t
         WHERE epoch_ms(b.event_time) BETWEEN $lo AND $hi`,
        { lo, hi, c: JSON.stringify(candidates.map((k) => ({ id: k.eventId, t: k.eventTimeMs }))) },
      );
      return rows.map((r) => String(r.event_id));
    } finally {
      session.close();
    }
  }

  async append(contract: AnyContract, records: readonly BronzeRecord[], partitions: readonly PartitionCommit[]): Promise<{ version: number }> {
    // No rows (a batch of duplicates, or of dead letters' places): the first version's columns,
    // so a missing table is not created, nor an existing one widened, with columns no event used.
    const columns = contractColumns(contract, records.length > 0 ? records.map((r) => r.writerVersion) : [contract.versions[0].version]);
    const table = await this.tables.bronze(contract, columns);
    const snap = await table.snapshot();
    // Early exit before any schema evolution; the authoritative check is the lake's (below).
    for (const p of partitions) {
      const inTable = snap.txnVersion(p.appId);
      const current = inTable === undefined ? undefined : Number(inTable);
      if (current !== p.expected) {
        throw mergeError('MERGE_OFFSETS_MOVED', `${p.appId} is at ${String(current)} in the table, this worker resumed from ${String(p.expected)}`, {
          details: { appId: p.appId, table: current, expected: p.expected },
        });
      }
    }
    // Schema evolution: a writer version with new fields adds nullable columns first.
    const have = new Set(snap.schema.fields.map((f) => f.name));
    if (columns.some((c) => !have.has(c.name))) await this.tables.evolve(table, columns);
    // Column by column (no object per row): the contract's columns the table has (timestamps as
    // the epoch milliseconds the contract decodes, which the lake takes as they are), then
    // bronze's own. Latest-schema fields that no writer of this table used yet are left out (null).
    const n = records.length;
    const latest = toColumns(contract, records.map((r) => r.event));
    const values: Record<string, unknown[]> = {};
    for (const field of [...snap.schema.fields, ...columns.filter((c) => !have.has(c.name))]) {
      const column = latest[field.name];
      if (column === undefined) continue;
      values[field.name] = column;
    }
    const ingestedAt = this.now();
    values[KEY_HASH] = records.map((r) => r.keyHash);
    values[BUCKET] = records.map((r) => r.bucket);
    values[EVENT_DATE] = records.map((r) => r.eventDate);
    values[KAFKA_PARTITION] = records.map((r) => r.partition);
    values[KAFKA_OFFSET] = records.map((r) => r.offset);
    values[INGESTED_AT] = new Array<unknown>(n).fill(ingestedAt);
    values[PRODUCED_AT] = records.map((r) => r.producedAtMs ?? null);
    // The check above saw an earlier snapshot than the one the lake commits on: the lake re-checks
    // at its own snapshot and against every commit it races past (a zombie's stale batch).
    const expectedTxns = Object.fromEntries(partitions.map((p) => [p.appId, p.expected ?? null]));
    try {
      const result = await table.append({ columns: values, rowCount: n }, { txns: partitions.map((p) => ({ appId: p.appId, version: p.last })), expectedTxns });
      return { version: result.version };
    } catch (err) {
      if (!isSluiceError(err, 'LAKE_TXN_MISMATCH')) throw err;
      const details = err.details ?? {};
      throw mergeError('MERGE_OFFSETS_MOVED', `${String(details.appId)} moved to ${String(details.actual)} in the table while committing, this worker resumed from ${String(details.expected)}`, {
        cause: err,
        details: { appId: details.appId, table: details.actual, expected: details.expected },
      });
    }
  }
}
