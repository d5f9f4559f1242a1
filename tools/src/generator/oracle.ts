import { CONTRACTS, type ContractName, type GoldAggregate, type ReasonCode } from '@sluice/contracts';
import type { GenEvent, GeneratedEvent } from './stream';

/** Where an event was sent: through ingest's HTTP API, or produced straight into the raw topic. */
export type Route = 'http' | 'raw';

/**
 * What the pipeline must hold after a stream, computed by definition from what was sent (never
 * by the code under test): bronze = every unique valid event_id once; silver = per entity key the
 * highest version, absent when that is a tombstone (append contracts: every unique event);
 * gold = each declared aggregate over every unique non-delete event; DLQ = every invalid event
 * produced straight to raw, with its reason; ingest rejections = every invalid event sent over
 * HTTP.
 */
export class Oracle {
  private readonly bronzeIds = new Map<ContractName, Set<string>>();
  /** Every unique valid event of a contract, in arrival order (what gold aggregates). */
  private readonly unique = new Map<ContractName, GenEvent[]>();
  private readonly latest = new Map<ContractName, Map<string, GenEvent>>();
  /** event_id → reason of invalid events produced straight to raw (validate must dead-letter each once). */
  readonly dlq = new Map<string, ReasonCode>();
  /** event_id → the bytes of each invalid event produced to raw (its DLQ record keeps them as they were). */
  readonly dlqBodies = new Map<string, string>();
  /** event_id → reason of invalid events sent over HTTP (ingest must reject each; nothing reaches raw). */
  readonly rejected = new Map<string, ReasonCode>();
  /** Events recorded, duplicates included. */
  sent = 0;

  /** Records that `ev` was delivered (acknowledged) on `route`. */
  add(ev: GeneratedEvent, route: Route): void {
    this.sent++;
    if (ev.kind === 'invalid') {
      (route === 'raw' ? this.dlq : this.rejected).set(ev.eventId, ev.reason!);
      if (route === 'raw') this.dlqBodies.set(ev.eventId, ev.body);
      return;
    }
    const e = ev.event!;
    let ids = this.bronzeIds.get(ev.contract);
    if (!ids) this.bronzeIds.set(ev.contract, (ids = new Set()));
    if (ids.has(e.event_id)) return;
    ids.add(e.event_id);
    let list = this.unique.get(ev.contract);
    if (!list) this.unique.set(ev.contract, (list = []));
    list.push(e);
    let m = this.latest.get(ev.contract);
    if (!m) this.latest.set(ev.contract, (m = new Map()));
    const id = CONTRACTS[ev.contract].kind === 'append' ? e.event_id : ev.key;
    const cur = m.get(id);
    if (!cur || e.version > cur.version) m.set(id, e);
  }

  /** Contracts that received at least one valid event. */
  contracts(): ContractName[] {
    return [...this.bronzeIds.keys()];
  }

  /** The unique valid events of a contract, by event_id: bronze's rows, their contents included. */
  events(contract: ContractName): ReadonlyMap<string, GenEvent> {
    return new Map((this.unique.get(contract) ?? []).map((e) => [e.event_id, e]));
  }

  /** Unique valid event_ids of a contract: what its bronze table must hold, each exactly once. */
  bronze(contract: ContractName): ReadonlySet<string> {
    return this.bronzeIds.get(contract) ?? new Set();
  }

  /**
   * Expected rows of each gold aggregate the contract declares: per tumbling window of event
   * time and group, `count` counts the events and `sum` adds a flattened column (null as 0).
   */
  gold(contract: ContractName): { aggregate: GoldAggregate; rows: GoldRow[] }[] {
    return CONTRACTS[contract].aggregates.map((aggregate) => {
      const rows = new Map<string, GoldRow>();
      for (const e of this.unique.get(contract) ?? []) {
        if (e.op === 'delete') continue;
        const flat = flatten(e);
        const windowMs = Math.floor(e.event_time / aggregate.windowMs) * aggregate.windowMs;
        const group = Object.fromEntries(aggregate.groupBy.map((f) => [f, flat[f]]));
        const id = goldRowId(windowMs, aggregate.groupBy.map((f) => flat[f]));
        let row = rows.get(id);
        if (!row) rows.set(id, (row = { windowMs, group, measures: Object.fromEntries(aggregate.measures.map((m) => [m.name, 0])) }));
        for (const m of aggregate.measures) row.measures[m.name] += m.fn === 'count' ? 1 : Number(flat[m.column as string] ?? 0);
      }
      return { aggregate, rows: [...rows.values()] };
    });
  }

  /** Expected silver rows of a contract by entity key (append contracts: by event_id), tombstoned keys absent. */
  silver(contract: ContractName): Map<string, GenEvent> {
    const out = new Map<string, GenEvent>();
    for (const [k, e] of this.latest.get(contract) ?? []) if (e.op !== 'delete') out.set(k, e);
    return out;
  }
}

/** One expected gold row: window start (epoch ms), group values, measures. */
export interface GoldRow {
  readonly windowMs: number;
  readonly group: Record<string, unknown>;
  readonly measures: Record<string, number>;
}

/** Identity of a gold row: its window and group values (how the audit matches table rows). */
export function goldRowId(windowMs: number, groupValues: readonly unknown[]): string {
  return JSON.stringify([windowMs, ...groupValues.map((v) => (v === undefined ? null : v))]);
}

/** An event as a table row: envelope and key fields, payload fields lifted (null on deletes). */
export function flatten(e: GenEvent): Record<string, unknown> {
  const { payload, ...rest } = e;
  return { ...rest, ...(payload ?? {}) };
}
