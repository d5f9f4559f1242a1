import { CONTRACTS, type ContractName, type ReasonCode } from '@sluice/contracts';
import { Rng, Zipf } from './rng';

/** A valid event as the generator built it: envelope, key fields, `payload` (null on deletes). */
export interface GenEvent {
  readonly event_id: string;
  /** Epoch ms. */
  readonly event_time: number;
  readonly producer: string;
  readonly schema_version: number;
  readonly version: number;
  readonly op: 'upsert' | 'delete';
  readonly payload: Record<string, unknown> | null;
  readonly [keyField: string]: unknown;
}

/** One event of the stream, ready to send: the exact JSON text and what it must become. */
export interface GeneratedEvent {
  /** Position in the stream, from 0. */
  readonly seq: number;
  readonly contract: ContractName;
  /** Entity key as the contracts join it (`|` between key fields); Kafka key of the raw topic. */
  readonly key: string;
  readonly eventId: string;
  /** The JSON text a producer sends (one NDJSON line; carries a `contract` field). */
  readonly body: string;
  /** `valid`: first delivery; `duplicate`: exact re-send of an earlier valid body; `invalid`: must be rejected. */
  readonly kind: 'valid' | 'duplicate' | 'invalid';
  /** For `invalid`: the reason code ingest answers and validate dead-letters it with. */
  readonly reason?: ReasonCode;
  /** For `valid` and `duplicate`: the event as data (what bronze/silver must hold). */
  readonly event?: GenEvent;
}

/** Knobs of {@link EventStream}. Rates are probabilities per generated event. */
export interface StreamOptions {
  readonly seed: number;
  /** Prefix of every event_id (letters, digits, `-`), so several streams can share a pipeline. */
  readonly runId?: string;
  /** Contracts to interleave; default all three. */
  readonly contracts?: readonly ContractName[];
  /** Distinct entities per contract; default orders 100 000, inventory 20 000, clickstream 50 000. */
  readonly entities?: Partial<Record<ContractName, number>>;
  /** Zipf exponent of entity popularity (0 = uniform); default 1.1. */
  readonly zipfS?: number;
  /** Share of valid events sent again later (producer retries, redeliveries); default 0.02. */
  readonly duplicateRate?: number;
  /** How many events later a duplicate may come, at most; default 500. */
  readonly duplicateDistance?: number;
  /** Share of entity updates whose two next versions are sent swapped; default 0.05. */
  readonly reorderRate?: number;
  /**
   * How many events after its newer version the older one of a swapped pair comes, at most;
   * default 0: right after it. A distance past a micro-batch brings the older version after the
   * newer one is committed and folded, which is what version resolution must get right.
   */
  readonly reorderDistance?: number;
  /** Share of state-contract updates that are tombstones (never an entity's first version); default 0.03. */
  readonly tombstoneRate?: number;
  /** Share of invalid events; default 0.01. */
  readonly invalidRate?: number;
  /** Event time of an event, epoch ms; default `startMs + seq * stepMs`. */
  readonly clock?: (seq: number) => number;
  /** Default clock: first event time (default the generator's construction time) and spacing (default 1 ms). */
  readonly startMs?: number;
  readonly stepMs?: number;
}

const DEFAULT_ENTITIES: Record<ContractName, number> = { orders: 100_000, inventory: 20_000, clickstream: 50_000 };
const STATUSES = ['created', 'paid', 'shipped', 'delivered', 'cancelled'] as const;
const CLICKS = ['page_view', 'click', 'add_to_cart', 'search', 'checkout'] as const;
const CURRENCIES = ['EUR', 'USD', 'GBP'] as const;

/** The invalid-event kinds the generator makes, each with the one reason code it must produce. */
export const INVALID_KINDS = [
  'EVENT_NOT_JSON',
  'RULE_RANGE',
  'RULE_ENUM',
  'EVENT_FIELD_MISSING',
  'RULE_KEY_MISSING',
  'RULE_CROSS_FIELD',
  'CONTRACT_UNKNOWN',
  'RULE_OP_PAYLOAD',
] as const satisfies readonly ReasonCode[];

interface ContractState {
  readonly name: ContractName;
  readonly zipf: Zipf;
  readonly versions: Uint32Array;
  readonly deleted: Uint8Array;
  readonly tombstones: boolean;
}

/**
 * A deterministic, endless stream of realistic events over the orders, inventory and
 * clickstream contracts: Zipf-skewed entity popularity, per-entity versions 1, 2, 3… with some
 * pairs sent swapped (out of order), exact duplicate re-sends, tombstones and invalid events
 * with a known reason. Same seed and options → same bodies (event times come from `clock`).
 */
export class EventStream {
  private readonly rng: Rng;
  private readonly states: ContractState[];
  private readonly ready: GeneratedEvent[] = [];
  private readonly dupes: { at: number; body: string; event: GenEvent; contract: ContractName; key: string }[] = [];
  /** Older versions of swapped pairs held back until `at` ({@link StreamOptions.reorderDistance}). */
  private readonly late: { at: number; event: GeneratedEvent }[] = [];
  /** Ids of events made but not sent yet (in `ready` or `late`): their copies wait for them. */
  private readonly waiting = new Set<string>();
  private seq = 0;
  private made = 0;
  private readonly runId: string;
  private readonly o: Required<Omit<StreamOptions, 'clock' | 'entities' | 'runId' | 'contracts'>> & { clock: (seq: number) => number };

  constructor(options: StreamOptions) {
    this.rng = new Rng(options.seed);
    this.runId = options.runId ?? `g${options.seed}`;
    if (!/^[A-Za-z0-9-]+$/.test(this.runId)) throw new RangeError(`runId must be letters, digits and -, got ${JSON.stringify(this.runId)}`);
    const startMs = options.startMs ?? Date.now();
    const stepMs = options.stepMs ?? 1;
    this.o = {
      seed: options.seed,
      zipfS: options.zipfS ?? 1.1,
      duplicateRate: options.duplicateRate ?? 0.02,
      duplicateDistance: options.duplicateDistance ?? 500,
      reorderRate: options.reorderRate ?? 0.05,
      reorderDistance: options.reorderDistance ?? 0,
      tombstoneRate: options.tombstoneRate ?? 0.03,
      invalidRate: options.invalidRate ?? 0.01,
      startMs,
      stepMs,
      clock: options.clock ?? ((seq) => startMs + seq * stepMs),
    };
    const names = options.contracts ?? (['orders', 'inventory', 'clickstream'] as const);
    this.states = names.map((name) => {
      const n = options.entities?.[name] ?? DEFAULT_ENTITIES[name];
      return { name, zipf: new Zipf(n, this.o.zipfS), versions: new Uint32Array(n), deleted: new Uint8Array(n), tombstones: CONTRACTS[name].kind === 'state' };
    });
  }

  /** The next event. */
  next(): GeneratedEvent {
    // A copy waits for its original: in a swapped pair the original can still be held back
    // when the copy falls due, and a copy first would be labelled a duplicate of nothing yet.
    const head = this.dupes[0];
    const due = head !== undefined && head.at <= this.seq && !this.waiting.has(head.event.event_id) ? this.dupes.shift() : undefined;
    if (due) return { seq: this.seq++, contract: due.contract, key: due.key, eventId: due.event.event_id, body: due.body, kind: 'duplicate', event: due.event };
    const late = this.late[0] !== undefined && this.late[0].at <= this.seq ? this.late.shift()!.event : undefined;
    if (late === undefined && this.ready.length === 0) this.produce();
    const ev = { ...(late ?? this.ready.shift()!), seq: this.seq++ };
    this.waiting.delete(ev.eventId);
    return ev;
  }

  /** The next `n` events. */
  take(n: number): GeneratedEvent[] {
    const out: GeneratedEvent[] = [];
    for (let i = 0; i < n; i++) out.push(this.next());
    return out;
  }

  /**
   * Version 1 of every entity of every contract, as upserts in entity order (ids
   * `<runId>-p<contract letter><entity>`): a table's established state before a measured run.
   * The stream's later events go on from version 2. Only before anything was taken from it.
   */
  everyEntityOnce(): GeneratedEvent[] {
    if (this.made > 0 || this.seq > 0) throw new Error('everyEntityOnce: the stream has already made events');
    const out: GeneratedEvent[] = [];
    for (const st of this.states) {
      const schemaVersion = CONTRACTS[st.name].latest.version;
      for (let entity = 0; entity < st.versions.length; entity++) {
        st.versions[entity] = 1;
        const keyFields = keyOf(st.name, entity);
        const eventId = `${this.runId}-p${st.name[0]}${entity}`;
        const event: GenEvent = {
          event_id: eventId,
          event_time: this.o.clock(0),
          producer: 'generator',
          schema_version: schemaVersion,
          version: 1,
          op: 'upsert',
          ...keyFields,
          payload: this.payload(st.name, entity, schemaVersion),
        };
        out.push({ seq: -1, contract: st.name, key: Object.values(keyFields).join('|'), eventId, body: toBody(st.name, event), kind: 'valid', event });
      }
    }
    return out;
  }

  /** Fills `ready` with one or two (a swapped pair) new events. */
  private produce(): void {
    const st = this.rng.pick(this.states);
    const n = this.made++;
    if (this.rng.chance(this.o.invalidRate)) {
      const bad = this.invalid(st.name, n);
      this.waiting.add(bad.eventId);
      this.ready.push(bad);
      return;
    }
    const entity = st.zipf.draw(this.rng);
    const swap = this.rng.chance(this.o.reorderRate);
    const pair: GeneratedEvent[] = [];
    for (let k = 0; k < (swap ? 2 : 1); k++) {
      const version = ++st.versions[entity];
      const del = st.tombstones && st.deleted[entity] === 0 && version > 1 && this.rng.chance(this.o.tombstoneRate);
      st.deleted[entity] = del ? 1 : 0;
      const keyFields = keyOf(st.name, entity);
      const eventId = `${this.runId}-${st.name[0]}${n}${k === 0 ? '' : 'b'}`;
      const schemaVersion = st.name === 'orders' && this.rng.chance(0.2) ? 1 : CONTRACTS[st.name].latest.version;
      const time = this.o.clock(this.seq + this.ready.length + k);
      const event: GenEvent = {
        event_id: eventId,
        event_time: time,
        producer: 'generator',
        schema_version: schemaVersion,
        version,
        op: del ? 'delete' : 'upsert',
        ...keyFields,
        payload: del ? null : this.payload(st.name, entity, schemaVersion),
      };
      const key = Object.values(keyFields).join('|');
      const body = toBody(st.name, event);
      pair.push({ seq: 0, contract: st.name, key, eventId, body, kind: 'valid', event });
      if (this.rng.chance(this.o.duplicateRate)) {
        const at = this.seq + 1 + this.rng.int(Math.max(1, this.o.duplicateDistance));
        const slot = this.dupes.findIndex((d) => d.at > at);
        const dup = { at, body, event, contract: st.name, key };
        if (slot < 0) this.dupes.push(dup);
        else this.dupes.splice(slot, 0, dup);
      }
    }
    for (const e of pair) this.waiting.add(e.eventId);
    if (swap && this.o.reorderDistance > 0) {
      // The newer version goes now, the older one up to reorderDistance events after it.
      this.ready.push(pair[1]);
      const at = this.seq + this.ready.length + 1 + this.rng.int(this.o.reorderDistance);
      const slot = this.late.findIndex((l) => l.at > at);
      if (slot < 0) this.late.push({ at, event: pair[0] });
      else this.late.splice(slot, 0, { at, event: pair[0] });
      return;
    }
    if (swap) pair.reverse();
    this.ready.push(...pair);
  }

  private payload(contract: ContractName, entity: number, schemaVersion: number): Record<string, unknown> {
    const r = this.rng;
    switch (contract) {
      case 'orders':
        return {
          customer_id: `cust-${entity % 5000}`,
          status: r.pick(STATUSES),
          total_cents: r.int(1_000_000),
          currency: r.pick(CURRENCIES),
          item_count: 1 + r.int(9),
          ...(schemaVersion >= 2 ? { coupon_code: r.chance(0.1) ? `C${r.int(100)}` : null } : {}),
        };
      case 'inventory': {
        const onHand = r.int(10_000);
        return { on_hand: onHand, reserved: r.int(onHand + 1) };
      }
      case 'clickstream':
        return {
          session_id: `s-${entity}-${r.int(4)}`,
          event_type: r.pick(CLICKS),
          page: `/p/${r.int(300)}`,
          referrer: r.chance(0.3) ? '/' : null,
          duration_ms: r.chance(0.5) ? r.int(60_000) : null,
        };
    }
  }

  /** One invalid event with exactly one fault, so its reason code is known in advance. */
  private invalid(contract: ContractName, n: number): GeneratedEvent {
    const kind = this.rng.pick(INVALID_KINDS);
    const eventId = `${this.runId}-x${n}`;
    const time = this.o.clock(this.seq + this.ready.length);
    // Inventory carries the cross-field fault; every other fault is written on an order.
    const c: ContractName = kind === 'RULE_CROSS_FIELD' ? 'inventory' : 'orders';
    const entity = this.rng.int(1000);
    const keyFields = keyOf(c, entity);
    const base: Record<string, unknown> = {
      event_id: eventId,
      event_time: time,
      producer: 'generator',
      schema_version: CONTRACTS[c].latest.version,
      version: 1,
      op: 'upsert',
      ...keyFields,
      payload: this.payload(c, entity, CONTRACTS[c].latest.version),
    };
    const p = base.payload as Record<string, unknown>;
    let body: string;
    switch (kind) {
      case 'EVENT_NOT_JSON':
        body = `{"contract":"orders","event_id":"${eventId}","version":1,"payload":{`;
        break;
      case 'RULE_RANGE':
        p.total_cents = -1 - this.rng.int(100);
        break;
      case 'RULE_ENUM':
        p.status = 'lost';
        break;
      case 'EVENT_FIELD_MISSING':
        delete p.currency;
        break;
      case 'RULE_KEY_MISSING':
        base.order_id = '';
        break;
      case 'RULE_CROSS_FIELD':
        p.reserved = (p.on_hand as number) + 1;
        break;
      case 'CONTRACT_UNKNOWN':
        break;
      case 'RULE_OP_PAYLOAD':
        base.op = 'delete';
        break;
    }
    body ??= toBody(kind === 'CONTRACT_UNKNOWN' ? 'nosuch' : c, base as GenEvent);
    return { seq: 0, contract: c, key: Object.values(keyFields).join('|') || 'empty', eventId, body, kind: 'invalid', reason: kind };
  }
}

/** Key fields of entity number `entity` of a contract. */
export function keyOf(contract: ContractName, entity: number): Record<string, string> {
  switch (contract) {
    case 'orders':
      return { order_id: `ord-${entity}` };
    case 'inventory':
      return { sku: `sku-${entity >> 2}`, warehouse_id: `wh-${entity & 3}` };
    case 'clickstream':
      return { user_id: `user-${entity}` };
  }
}

/** The producer JSON of an event: ISO event time and a `contract` field naming the contract. */
export function toBody(contract: string, event: GenEvent): string {
  return JSON.stringify({ contract, ...event, event_time: new Date(event.event_time).toISOString() });
}
