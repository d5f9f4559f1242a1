import { expectedBronze, expectedGold, expectedSilver, generateStream, type OracleContractSpec } from './oracle';

const orders: OracleContractSpec = {
  name: 'orders',
  keyField: 'order_id',
  entities: 50,
  tombstones: true,
  payload: (rng) => ({ status: rng.pick(['created', 'paid', 'shipped']), amount: rng.int(10_000) / 100 }),
  gold: [{ name: 'orders_by_status', groupBy: ['status'], windowMs: 60_000 }],
};
const clicks: OracleContractSpec = {
  name: 'clickstream',
  keyField: 'user_id',
  entities: 20,
  tombstones: false,
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

  it('contains duplicates, swapped versions, tombstones and two dates', () => {
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
    expect(sends.some((s) => s.event.op === 'delete')).toBe(true);
    expect(sends.some((s) => s.contract === 'clickstream' && s.event.op === 'delete')).toBe(false);
    const dates = new Set(sends.map((s) => new Date(s.event.event_time).toISOString().slice(0, 10)));
    expect(dates.size).toBe(2);
  });

  it('expected tables follow from the definitions', () => {
    const bronze = expectedBronze(sends);
    expect(bronze.get('orders')).toHaveLength(2000);
    const silver = expectedSilver(sends, (c) => (c === 'orders' ? 'order_id' : 'user_id'));
    for (const [key, e] of silver.get('orders')!) {
      const versions = bronze.get('orders')!.filter((x) => x.order_id === key).map((x) => x.version);
      expect(e.version).toBe(Math.max(...versions));
      expect(e.op).toBe('upsert');
    }
    const gold = expectedGold(bronze.get('orders')!, orders.gold![0]);
    expect(gold.reduce((s, r) => s + r.count, 0)).toBe(2000);
  });
});
