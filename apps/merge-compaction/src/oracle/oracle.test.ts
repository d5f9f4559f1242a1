import { expectedBronze, expectedGold, expectedSilver, flatten, generateStream, type OracleContractSpec } from './oracle';

const orders: OracleContractSpec = {
  name: 'orders',
  entities: 50,
  tombstones: true,
  keyOf: (e) => ({ order_id: `o-${e}` }),
  payload: (rng) => ({ status: rng.pick(['created', 'paid', 'shipped']), total_cents: rng.int(10_000) }),
  schemaVersionAt: (i) => (i < 1000 ? 1 : 2),
};
const clicks: OracleContractSpec = {
  name: 'clickstream',
  entities: 20,
  tombstones: false,
  keyOf: (e) => ({ user_id: `u-${e}` }),
  payload: (rng) => ({ page: rng.pick(['/', '/cart', '/buy']) }),
};
const options = {
  seed: 7,
  eventsPerContract: 2000,
  duplicateRate: 0.1,
  reorderRate: 0.2,
  tombstoneRate: 0.1,
  startMs: Date.UTC(2026, 0, 1, 23, 58),
  stepMs: 50,
  duplicateDistance: 100,
};

describe('oracle generator', () => {
  const sends = generateStream([orders, clicks], options);

  it('is deterministic for a seed', () => {
    expect(JSON.stringify(generateStream([orders, clicks], options))).toBe(JSON.stringify(sends));
    expect(JSON.stringify(generateStream([orders, clicks], { ...options, seed: 8 }))).not.toBe(JSON.stringify(sends));
  });

  it('contains duplicates, swapped versions, tombstones, two schema versions and two dates', () => {
    const dups = sends.filter((s) => s.duplicate);
    expect(dups.length).toBeGreaterThan(300);
    const ids = new Set(sends.filter((s) => !s.duplicate).map((s) => s.event.event_id));
    expect(ids.size).toBe(4000);
    for (const d of dups) expect(ids.has(d.event.event_id)).toBe(true);
    let swapped = 0;
    const last = new Map<string, number>();
    for (const s of sends.filter((x) => !x.duplicate)) {
      const k = `${s.contract}/${s.key}`;
      if ((last.get(k) ?? 0) > s.event.version) swapped++;
      last.set(k, Math.max(last.get(k) ?? 0, s.event.version));
    }
    expect(swapped).toBeGreaterThan(50);
    expect(sends.some((s) => s.event.op === 'delete' && s.event.payload === null)).toBe(true);
    expect(sends.some((s) => s.contract === 'clickstream' && s.event.op === 'delete')).toBe(false);
    expect(new Set(sends.filter((s) => s.contract === 'orders').map((s) => s.event.schema_version))).toEqual(new Set([1, 2]));
    const dates = new Set(sends.map((s) => new Date(s.event.event_time).toISOString().slice(0, 10)));
    expect(dates.size).toBe(2);
  });

  it('holds the older version of a swapped pair back up to reorderDistance sends, its copies after it', () => {
    const late = generateStream([orders, clicks], { ...options, reorderDistance: 400 });
    const fresh = late.filter((s) => !s.duplicate);
    expect(new Set(fresh.map((s) => s.event.event_id)).size).toBe(4000);
    expect(fresh).toHaveLength(4000);
    // Per late older version: how many sends after its newer version it came.
    const at = new Map<string, number>();
    const gaps: number[] = [];
    late.forEach((s, i) => {
      if (s.duplicate) {
        expect(at.has(s.event.event_id)).toBe(true); // a copy never precedes its original
        return;
      }
      const newer = at.get(`${s.contract}/${s.key}/${s.event.version + 1}`);
      if (newer !== undefined) gaps.push(i - newer);
      at.set(s.event.event_id, i);
      at.set(`${s.contract}/${s.key}/${s.event.version}`, i);
    });
    expect(gaps.length).toBeGreaterThan(300);
    expect(Math.max(...gaps)).toBeGreaterThan(200);
    // Counted from the newer version's send; a few sends due at the same moment go first.
    expect(Math.max(...gaps)).toBeLessThanOrEqual(400 + 10);
    expect(gaps.filter((g) => g === 1).length).toBeLessThan(gaps.length / 10);
  });

  it('expected tables follow from the definitions', () => {
    const bronze = expectedBronze(sends);
    expect(bronze.get('orders')).toHaveLength(2000);
    const silver = expectedSilver(sends, (c) => (c === 'orders' ? 'state' : 'append'));
    expect(silver.get('clickstream')!.size).toBe(2000);
    for (const [key, e] of silver.get('orders')!) {
      const versions = bronze.get('orders')!.filter((x) => x.order_id === key).map((x) => x.version);
      expect(e.version).toBe(Math.max(...versions));
      expect(e.op).toBe('upsert');
    }
    const spec = { groupBy: ['status'], windowMs: 60_000, measures: [{ name: 'n', fn: 'count' as const }, { name: 'amount', fn: 'sum' as const, column: 'total_cents' }] };
    const gold = expectedGold(bronze.get('orders')!, spec);
    const upserts = bronze.get('orders')!.filter((e) => e.op === 'upsert');
    expect(gold.reduce((s, r) => s + r.measures.n, 0)).toBe(upserts.length);
    expect(gold.reduce((s, r) => s + r.measures.amount, 0)).toBe(upserts.reduce((s, e) => s + Number(flatten(e).total_cents), 0));
  });
});
