import { CONTRACTS, decodeEvent } from '@sluice/contracts';
import { Oracle } from './oracle';
import { Rng, Zipf } from './rng';
import { EventStream, INVALID_KINDS } from './stream';

const START = Date.parse('2026-06-01T12:00:00.000Z');
const stream = (seed = 7, extra = {}) => new EventStream({ seed, startMs: START, stepMs: 1, ...extra });

describe('EventStream', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const a = stream(7).take(3000).map((e) => e.body);
    const b = stream(7).take(3000).map((e) => e.body);
    const c = stream(8).take(3000).map((e) => e.body);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
  });

  it('makes valid events the contracts accept, and invalid ones rejected with exactly the promised reason', () => {
    const events = stream(3, { invalidRate: 0.05 }).take(6000);
    const reasons = new Set<string>();
    for (const e of events) {
      const r = decodeEvent(e.body, { now: START + 10_000 });
      if (e.kind === 'invalid') {
        expect(r.ok).toBe(false);
        if (!r.ok) expect({ id: e.eventId, code: r.issues[0].code, all: r.issues.length }).toEqual({ id: e.eventId, code: e.reason, all: 1 });
        reasons.add(e.reason!);
      } else {
        if (!r.ok) throw new Error(`${e.body} rejected: ${JSON.stringify(r.issues)}`);
        expect(r.name).toBe(e.contract);
        expect(r.contract.entityKey(r.event as never)).toBe(e.key);
      }
    }
    expect([...reasons].sort()).toEqual([...INVALID_KINDS].sort());
  });

  it('sends duplicates as exact copies, some versions out of order, and tombstones only on state contracts', () => {
    const events = stream(11).take(20_000);
    const first = new Map<string, string>();
    let dupes = 0;
    for (const e of events) {
      if (e.kind === 'valid') first.set(e.eventId, e.body);
      if (e.kind === 'duplicate') {
        dupes++;
        expect(first.get(e.eventId)).toBe(e.body);
      }
    }
    expect(dupes).toBeGreaterThan(200);
    const lastVersion = new Map<string, number>();
    let outOfOrder = 0;
    for (const e of events.filter((x) => x.kind === 'valid')) {
      const id = `${e.contract}/${e.key}`;
      if ((lastVersion.get(id) ?? 0) > e.event!.version) outOfOrder++;
      lastVersion.set(id, Math.max(lastVersion.get(id) ?? 0, e.event!.version));
    }
    expect(outOfOrder).toBeGreaterThan(100);
    const deletes = events.filter((e) => e.kind === 'valid' && e.event!.op === 'delete');
    expect(deletes.length).toBeGreaterThan(50);
    expect(deletes.every((e) => CONTRACTS[e.contract].kind === 'state')).toBe(true);
  });

  it('never sends a copy before its original, even when the original waits in a swapped pair', () => {
    // Dense copies at short distances and many swapped pairs: with the copy's due time counted
    // from the pair's first event, a copy of the pair's second (older) event came out first.
    const events = stream(5, { duplicateRate: 0.5, duplicateDistance: 2, reorderRate: 0.5, invalidRate: 0 }).take(20_000);
    const sent = new Set<string>();
    let early = 0;
    for (const e of events) {
      if (e.kind === 'duplicate' && !sent.has(e.eventId)) early++;
      if (e.kind === 'valid') sent.add(e.eventId);
    }
    expect(events.filter((e) => e.kind === 'duplicate').length).toBeGreaterThan(5000);
    expect(early).toBe(0);
  });

  it('holds the older version of a swapped pair back up to reorderDistance events, its copies after it', () => {
    const events = stream(9, { reorderDistance: 2000, reorderRate: 0.2, duplicateRate: 0.2, duplicateDistance: 50, invalidRate: 0 }).take(30_000);
    const newest = new Map<string, { version: number; at: number }>();
    const sent = new Set<string>();
    const gaps: number[] = [];
    for (const [i, e] of events.entries()) {
      if (e.kind === 'duplicate') {
        expect(sent.has(e.eventId)).toBe(true);
        continue;
      }
      sent.add(e.eventId);
      const id = `${e.contract}/${e.key}`;
      const seen = newest.get(id);
      if (seen && seen.version > e.event!.version) gaps.push(i - seen.at);
      if (!seen || seen.version < e.event!.version) newest.set(id, { version: e.event!.version, at: i });
    }
    expect(gaps.length).toBeGreaterThan(500);
    // About the distance: copies and other held-back versions falling due can come in between.
    expect(Math.max(...gaps)).toBeLessThan(2 * 2000);
    // Measured from the newest version so far, which for a popular entity is often a later one.
    expect(gaps.filter((g) => g > 500).length).toBeGreaterThan(gaps.length / 5);
    // Same seed, same stream.
    expect(stream(9, { reorderDistance: 2000 }).take(3000).map((e) => e.body)).toEqual(stream(9, { reorderDistance: 2000 }).take(3000).map((e) => e.body));
  });

  it('skews popularity: the top 1% of entities get far more than 1% of the events', () => {
    const events = stream(5, { contracts: ['orders'], entities: { orders: 10_000 }, invalidRate: 0 }).take(20_000);
    const counts = new Map<string, number>();
    for (const e of events) counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
    const sorted = [...counts.values()].sort((a, b) => b - a);
    const top = sorted.slice(0, 100).reduce((s, n) => s + n, 0);
    expect(top / events.length).toBeGreaterThan(0.3);
  });

  it('makes version 1 of every entity once, valid, with ids of their own; the stream then goes on from version 2', () => {
    const s = stream(5, { entities: { orders: 300, inventory: 40, clickstream: 100 } });
    const seeded = s.everyEntityOnce();
    expect(seeded).toHaveLength(440);
    expect(new Set(seeded.map((e) => e.eventId)).size).toBe(440);
    expect(new Set(seeded.map((e) => `${e.contract}|${e.key}`)).size).toBe(440);
    for (const e of seeded) {
      const r = decodeEvent(e.body, { now: START + 10_000 });
      if (!r.ok) throw new Error(`${e.body} rejected: ${JSON.stringify(r.issues)}`);
      expect([e.kind, r.event.version, r.event.op]).toEqual(['valid', 1, 'upsert']);
    }
    const later = s.take(2000).filter((e) => e.kind === 'valid');
    expect(later.some((e) => seeded.some((p) => p.eventId === e.eventId))).toBe(false);
    expect(Math.min(...later.map((e) => e.event!.version))).toBe(2);
    expect(() => s.everyEntityOnce()).toThrow('already made events');
  });

  it('rejects a runId that would make invalid event ids', () => {
    expect(() => new EventStream({ seed: 1, runId: 'a b' })).toThrow(/runId/);
  });
});

describe('Zipf', () => {
  it('draws rank 0 most often and stays in range', () => {
    const z = new Zipf(50, 1.2);
    const rng = new Rng(1);
    const hits = new Array<number>(50).fill(0);
    for (let i = 0; i < 20_000; i++) hits[z.draw(rng)]++;
    expect(hits[0]).toBe(Math.max(...hits));
    expect(hits.reduce((s, n) => s + n, 0)).toBe(20_000);
  });

  it('refuses an empty population', () => {
    expect(() => new Zipf(0, 1)).toThrow(RangeError);
  });
});

describe('Oracle', () => {
  it('keeps the highest version per key, drops tombstoned keys, counts each event_id once and splits invalid by route', () => {
    const events = stream(13, { invalidRate: 0.02 }).take(10_000);
    const oracle = new Oracle();
    events.forEach((e, i) => oracle.add(e, i % 2 === 0 ? 'raw' : 'http'));
    const valid = events.filter((e) => e.kind === 'valid');
    const orders = valid.filter((e) => e.contract === 'orders');
    expect(oracle.bronze('orders').size).toBe(orders.length);
    // Silver by definition, recomputed independently here.
    const best = new Map<string, { version: number; op: string; id: string }>();
    for (const e of orders) {
      const cur = best.get(e.key);
      if (!cur || e.event!.version > cur.version) best.set(e.key, { version: e.event!.version, op: e.event!.op, id: e.eventId });
    }
    const want = [...best].filter(([, v]) => v.op !== 'delete').map(([k, v]): [string, string] => [k, v.id]);
    const got = [...oracle.silver('orders')].map(([k, e]): [string, string] => [k, e.event_id]);
    expect(new Map(got)).toEqual(new Map(want));
    expect(oracle.silver('clickstream').size).toBe(valid.filter((e) => e.contract === 'clickstream').length);
    const invalid = events.filter((e) => e.kind === 'invalid');
    expect(oracle.dlq.size + oracle.rejected.size).toBe(invalid.length);
    expect(oracle.dlq.size).toBeGreaterThan(0);
    expect(oracle.rejected.size).toBeGreaterThan(0);
  });

  it('aggregates gold by definition: orders per status per minute over every unique non-delete event', () => {
    const events = stream(17, { invalidRate: 0.02 }).take(5_000);
    const oracle = new Oracle();
    for (const e of events) oracle.add(e, 'raw');
    // Recomputed independently: unique valid orders (first copy of an event_id), deletes out.
    const seen = new Set<string>();
    const want = new Map<string, { orders: number; amount_cents: number }>();
    for (const e of events) {
      if (e.kind !== 'valid' || e.contract !== 'orders' || seen.has(e.eventId)) continue;
      seen.add(e.eventId);
      const ev = e.event!;
      if (ev.op === 'delete') continue;
      const minute = ev.event_time - (ev.event_time % 60_000);
      const id = `${minute}|${String(ev.payload!.status)}`;
      const cur = want.get(id) ?? { orders: 0, amount_cents: 0 };
      want.set(id, { orders: cur.orders + 1, amount_cents: cur.amount_cents + Number(ev.payload!.total_cents) });
    }
    const [statusMinute] = oracle.gold('orders');
    expect(statusMinute.aggregate.name).toBe('status_minute');
    const got = new Map(statusMinute.rows.map((r) => [`${r.windowMs}|${String(r.group.status)}`, r.measures]));
    expect(got).toEqual(want);
    expect(want.size).toBeGreaterThan(1);
    expect(oracle.gold('clickstream')[0].rows.reduce((n, r) => n + r.measures.events, 0)).toBe(
      new Set(events.filter((e) => e.kind === 'valid' && e.contract === 'clickstream').map((e) => e.eventId)).size,
    );
  });
});
