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

/** An event as a producer writes it: envelope, key fields, `payload` (null on deletes). */
export interface OracleEvent {
  event_id: string;
  /** ms since epoch. */
  event_time: number;
  producer: string;
  schema_version: number;
  /** Entity version, strictly increasing per entity in the generator's truth. */
  version: number;
  op: 'upsert' | 'delete';
  payload: Record<string, unknown> | null;
  [keyField: string]: unknown;
}

/** How the oracle makes events of one contract. */
export interface OracleContractSpec {
  readonly name: string;
  /** Number of distinct entities. */
  readonly entities: number;
  /** Whether the contract allows `op: delete`. */
  readonly tombstones: boolean;
  /** Key fields of entity number `entity`. */
  keyOf(entity: number): Record<string, string>;
  /** Payload of one upsert. `schemaVersion` is the writer version the generator picked. */
  payload(rng: Rng, entity: number, version: number, schemaVersion: number): Record<string, unknown>;
  /** Writer schema version of the i-th event of this contract (default 1): schema evolution mid-stream. */
  schemaVersionAt?(i: number): number;
}

/** A windowed aggregate over the flattened unique non-delete events (as contracts declare gold). */
export interface OracleGoldSpec {
  readonly groupBy: readonly string[];
  readonly windowMs: number;
  readonly measures: readonly { readonly name: string; readonly fn: 'count' | 'sum'; readonly column?: string }[];
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
  /**
   * How many sends (all contracts) the older version of a swapped pair may be held back after
   * the newer one; 0 or absent: the two are sent next to each other in their contract's order.
   */
  readonly reorderDistance?: number;
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
 * with `reorderRate` two consecutive versions of an entity are emitted swapped, the older one up
 * to `reorderDistance` sends after the newer. Duplicates are exact copies of an earlier send,
 * re-emitted up to `duplicateDistance` sends later.
 */
export function generateStream(contracts: readonly OracleContractSpec[], options: StreamOptions): Send[] {
  const rng = new Rng(options.seed);
  const out: Send[] = [];
  const perContract = contracts.map((c) => makeContractEvents(c, options, rng));
  const cursors = perContract.map(() => 0);
  /** Per contract, where its last send taken in order went (for an older version: its newer one). */
  const lastAt = perContract.map(() => 0);
  // Sends due later: copies of earlier sends, and held-back older versions (`late`).
  const pending: { at: number; send: Send; late: boolean }[] = [];
  const emit = (send: Send) => {
    out.push(send);
    if (rng.chance(options.duplicateRate)) {
      pending.push({ at: out.length + 1 + rng.int(Math.max(1, options.duplicateDistance)), send, late: false });
    }
  };
  const release = (p: { send: Send; late: boolean }) => (p.late ? emit(p.send) : out.push({ ...p.send, duplicate: true }));
  for (;;) {
    // Re-emit what is due, in the order it became due.
    for (let d = 0; d < pending.length; ) {
      if (pending[d].at <= out.length) release(pending.splice(d, 1)[0]);
      else d++;
    }
    const open = perContract.map((l, j) => (cursors[j] < l.length ? j : -1)).filter((j) => j >= 0);
    if (open.length === 0) {
      while (pending.length > 0) release(pending.shift()!);
      break;
    }
    const j = rng.pick(open);
    const { send, older } = perContract[j][cursors[j]++];
    if (older && (options.reorderDistance ?? 0) > 0) {
      pending.push({ at: lastAt[j] + 1 + rng.int(options.reorderDistance!), send, late: true });
    } else {
      lastAt[j] = out.length;
      emit(send);
    }
  }
  // Event times follow send order (a producer's clock), so reordering is by version, not time.
  out.forEach((s, i) => {
    if (!s.duplicate) s.event.event_time = options.startMs + i * options.stepMs;
  });
  return out;
}

/** A contract's events in version order per entity, swapped pairs newer first (`older` marks the second). */
function makeContractEvents(c: OracleContractSpec, options: StreamOptions, rng: Rng): { send: Send; older: boolean }[] {
  const versions = new Array<number>(c.entities).fill(0);
  const deleted = new Array<boolean>(c.entities).fill(false);
  const sends: { send: Send; older: boolean }[] = [];
  while (sends.length < options.eventsPerContract) {
    const entity = rng.int(c.entities);
    const swap = rng.chance(options.reorderRate) && sends.length + 2 <= options.eventsPerContract;
    const batch: Send[] = [];
    for (let k = 0; k < (swap ? 2 : 1); k++) {
      const version = ++versions[entity];
      // A deleted entity comes back with an upsert; otherwise a tombstone with tombstoneRate.
      const del = c.tombstones && !deleted[entity] && version > 1 && rng.chance(options.tombstoneRate);
      deleted[entity] = del;
      const keyFields = c.keyOf(entity);
      const schemaVersion = c.schemaVersionAt?.(sends.length + k) ?? 1;
      const event: OracleEvent = {
        event_id: rng.uuid(),
        event_time: 0,
        producer: 'oracle',
        schema_version: schemaVersion,
        version,
        op: del ? 'delete' : 'upsert',
        ...keyFields,
        payload: del ? null : c.payload(rng, entity, version, schemaVersion),
      };
      batch.push({ contract: c.name, key: Object.values(keyFields).join('|'), event, duplicate: false });
    }
    if (swap) batch.reverse();
    sends.push(...batch.map((send, k) => ({ send, older: swap && k === 1 })));
  }
  return sends;
}

/** An event as a table row: envelope and key fields, payload fields lifted (null on deletes). */
export function flatten(e: OracleEvent): Record<string, unknown> {
  const { payload, ...rest } = e;
  return { ...rest, ...(payload ?? {}) };
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
 * Current state per contract: per entity key (`Send.key`), the event with the highest version;
 * absent when that event is a tombstone. `append` contracts keep every unique event, keyed by
 * event_id.
 */
export function expectedSilver(sends: readonly Send[], kindOf: (contract: string) => 'state' | 'append'): Map<string, Map<string, OracleEvent>> {
  const keyOfEvent = new Map<string, string>();
  for (const s of sends) keyOfEvent.set(s.event.event_id, s.key);
  const out = new Map<string, Map<string, OracleEvent>>();
  for (const [contract, events] of expectedBronze(sends)) {
    const m = new Map<string, OracleEvent>();
    if (kindOf(contract) === 'append') {
      for (const e of events) m.set(e.event_id, e);
    } else {
      for (const e of events) {
        const key = keyOfEvent.get(e.event_id) as string;
        const cur = m.get(key);
        if (!cur || e.version > cur.version) m.set(key, e);
      }
      for (const [k, e] of m) if (e.op === 'delete') m.delete(k);
    }
    out.set(contract, m);
  }
  return out;
}

/** One gold row: group values, window start (ms) and measures. */
export interface GoldRow {
  readonly windowMs: number;
  readonly group: Record<string, unknown>;
  readonly measures: Record<string, number>;
}

/** The windowed aggregates of `spec` over the unique events of one contract, sorted by (window, group). */
export function expectedGold(events: readonly OracleEvent[], spec: OracleGoldSpec): GoldRow[] {
  const rows = new Map<string, GoldRow>();
  for (const e of events) {
    if (e.op === 'delete') continue;
    const flat = flatten(e);
    const windowMs = Math.floor(e.event_time / spec.windowMs) * spec.windowMs;
    const id = JSON.stringify([windowMs, ...spec.groupBy.map((f) => flat[f])]);
    let row = rows.get(id);
    if (!row) {
      row = { windowMs, group: Object.fromEntries(spec.groupBy.map((f) => [f, flat[f]])), measures: Object.fromEntries(spec.measures.map((m) => [m.name, 0])) };
      rows.set(id, row);
    }
    for (const m of spec.measures) row.measures[m.name] += m.fn === 'count' ? 1 : Number(flat[m.column as string] ?? 0);
  }
  return [...rows.values()].sort((a, b) => a.windowMs - b.windowMs || JSON.stringify(a.group).localeCompare(JSON.stringify(b.group)));
}
