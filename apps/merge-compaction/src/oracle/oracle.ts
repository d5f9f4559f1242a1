import { Rng } from './random';

/**
 * The oracle: a deterministic generator of event streams with duplicates, out-of-order entity
 * versions, tombstones and several contracts, and the bronze / silver / gold those streams
 * must produce. Tests compare the pipeline's tables with these, row for row.
 *
 * It works on plain envelope + payload objects; the caller encodes them with the contract's
 * codec. Expected state is computed by definition (set of unique ids, fold by max version,
 * count per window), never by the code under test.
 */

/** The envelope every contract shares, plus the payload fields. */
export interface OracleEvent {
  event_id: string;
  /** ms since epoch. */
  event_time: number;
  producer: string;
  schema_version: number;
  /** Entity version, strictly increasing per entity in the generator's truth. */
  version: number;
  op: 'upsert' | 'delete';
  [field: string]: unknown;
}

/** How the oracle makes events of one contract. */
export interface OracleContractSpec {
  readonly name: string;
  /** Entity key field in the event (e.g. `order_id`). */
  readonly keyField: string;
  /** Number of distinct entities. */
  readonly entities: number;
  /** Whether the contract allows `op: delete`. */
  readonly tombstones: boolean;
  /** Payload fields of one event (never the envelope or key). */
  payload(rng: Rng, entity: number, version: number): Record<string, unknown>;
  /** Gold aggregates this contract declares: group-by fields and a time window. */
  readonly gold?: readonly OracleGoldSpec[];
}

/** A windowed count: `count(*)` of unique events per group per window of event time. */
export interface OracleGoldSpec {
  readonly name: string;
  readonly groupBy: readonly string[];
  readonly windowMs: number;
}

/** Knobs of {@link generateStream}. */
export interface StreamOptions {
  readonly seed: number;
  /** Events per contract before duplicates are added. */
  readonly eventsPerContract: number;
  /** Probability that an event is sent again later (producer retry / DLQ replay / redelivery). */
  readonly duplicateRate: number;
  /** Probability that an entity's next two versions are sent swapped. */
  readonly reorderRate: number;
  /** Probability that an update is a tombstone (contracts with tombstones only). */
  readonly tombstoneRate: number;
  /** Event time of the first event, ms. Near midnight UTC makes the stream span two dates. */
  readonly startMs: number;
  /** Event-time spacing between consecutive events, ms. */
  readonly stepMs: number;
  /** How far back (in events) a duplicate may be re-sent; keep its event time inside the dedup watermark. */
  readonly duplicateDistance: number;
}

/** One generated send: which contract, the entity key, the event. */
export interface Send {
  readonly contract: string;
  readonly key: string;
  readonly event: OracleEvent;
  /** True for a re-send of an earlier event_id. */
  readonly duplicate: boolean;
}

/**
 * Generates the send order for all contracts, interleaved. Per entity, versions go 1, 2, 3, …;
 * with `reorderRate` two consecutive versions of an entity are emitted swapped. Duplicates are
 * exact copies of an earlier send, re-emitted up to `duplicateDistance` sends later.
 */
export function generateStream(contracts: readonly OracleContractSpec[], options: StreamOptions): Send[] {
  const rng = new Rng(options.seed);
  const out: Send[] = [];
  const perContract = contracts.map((c) => makeContractEvents(c, options, rng));
  const cursors = perContract.map(() => 0);
  const pendingDup: { at: number; send: Send }[] = [];
  for (;;) {
    // Re-emit duplicates that are due, in the order they became due.
    for (let d = 0; d < pendingDup.length; ) {
      if (pendingDup[d].at <= out.length) out.push({ ...pendingDup.splice(d, 1)[0].send, duplicate: true });
      else d++;
    }
    const open = perContract.map((l, j) => (cursors[j] < l.length ? j : -1)).filter((j) => j >= 0);
    if (open.length === 0) {
      for (const d of pendingDup.splice(0)) out.push({ ...d.send, duplicate: true });
      break;
    }
    const j = rng.pick(open);
    const send = perContract[j][cursors[j]++];
    out.push(send);
    if (rng.chance(options.duplicateRate)) {
      pendingDup.push({ at: out.length + 1 + rng.int(Math.max(1, options.duplicateDistance)), send });
    }
  }
  // Event times follow send order (a producer's clock), so reordering is by version, not time.
  out.forEach((s, i) => {
    if (!s.duplicate) s.event.event_time = options.startMs + i * options.stepMs;
  });
  return out;
}

function makeContractEvents(c: OracleContractSpec, options: StreamOptions, rng: Rng): Send[] {
  const versions = new Array<number>(c.entities).fill(0);
  const deleted = new Array<boolean>(c.entities).fill(false);
  const sends: Send[] = [];
  while (sends.length < options.eventsPerContract) {
    const entity = rng.int(c.entities);
    const swap = rng.chance(options.reorderRate) && sends.length + 2 <= options.eventsPerContract;
    const batch: Send[] = [];
    for (let k = 0; k < (swap ? 2 : 1); k++) {
      const version = ++versions[entity];
      // A deleted entity comes back with an upsert; otherwise a tombstone with tombstoneRate.
      const del = c.tombstones && !deleted[entity] && version > 1 && rng.chance(options.tombstoneRate);
      deleted[entity] = del;
      const key = `${c.name.slice(0, 3)}-${entity}`;
      const event: OracleEvent = {
        event_id: rng.uuid(),
        event_time: 0,
        producer: 'oracle',
        schema_version: 1,
        version,
        op: del ? 'delete' : 'upsert',
        [c.keyField]: key,
        ...c.payload(rng, entity, version),
      };
      batch.push({ contract: c.name, key, event, duplicate: false });
    }
    if (swap) batch.reverse();
    sends.push(...batch);
  }
  return sends;
}

/** Unique events per contract, by event_id (what bronze must hold, each exactly once). */
export function expectedBronze(sends: readonly Send[]): Map<string, OracleEvent[]> {
  const seen = new Set<string>();
  const out = new Map<string, OracleEvent[]>();
  for (const s of sends) {
    if (seen.has(s.event.event_id)) continue;
    seen.add(s.event.event_id);
    const list = out.get(s.contract) ?? [];
    list.push(s.event);
    out.set(s.contract, list);
  }
  return out;
}

/**
 * Current state per contract: per entity key, the event with the highest version; absent when
 * that event is a tombstone. Keyed by entity key.
 */
export function expectedSilver(
  sends: readonly Send[],
  keyFieldOf: (contract: string) => string,
): Map<string, Map<string, OracleEvent>> {
  const best = new Map<string, Map<string, OracleEvent>>();
  for (const [contract, events] of expectedBronze(sends)) {
    const keyField = keyFieldOf(contract);
    const m = new Map<string, OracleEvent>();
    for (const e of events) {
      const key = String(e[keyField]);
      const cur = m.get(key);
      if (!cur || e.version > cur.version) m.set(key, e);
    }
    for (const [k, e] of m) if (e.op === 'delete') m.delete(k);
    best.set(contract, m);
  }
  return best;
}

/** One gold row: group values, window start (ms) and count. */
export interface GoldRow {
  readonly group: Record<string, unknown>;
  readonly windowStartMs: number;
  readonly count: number;
}

/** The windowed counts of `spec` over the unique events of one contract, sorted by (window, group). */
export function expectedGold(events: readonly OracleEvent[], spec: OracleGoldSpec): GoldRow[] {
  const counts = new Map<string, GoldRow>();
  for (const e of events) {
    const windowStartMs = Math.floor(e.event_time / spec.windowMs) * spec.windowMs;
    const group = Object.fromEntries(spec.groupBy.map((f) => [f, e[f]]));
    const id = JSON.stringify([windowStartMs, ...spec.groupBy.map((f) => e[f])]);
    const cur = counts.get(id);
    counts.set(id, { group, windowStartMs, count: (cur?.count ?? 0) + 1 });
  }
  return [...counts.values()].sort(
    (a, b) => a.windowStartMs - b.windowStartMs || JSON.stringify(a.group).localeCompare(JSON.stringify(b.group)),
  );
}
