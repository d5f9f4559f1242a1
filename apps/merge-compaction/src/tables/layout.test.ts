import { CONTRACTS } from '@sluice/contracts';
import { bronzeColumns, contractColumns, goldColumns, silverColumns, silverKeys } from './layout';

describe('table layout', () => {
  it('has a column for every partition column the contracts declare', () => {
    for (const c of Object.values(CONTRACTS)) {
      const cols = contractColumns(c, [undefined]);
      const bronze = bronzeColumns(cols).map((x) => x.name);
      const silver = silverColumns(cols).map((x) => x.name);
      for (const p of c.partitionColumns.bronze) expect(bronze).toContain(p);
      for (const p of c.partitionColumns.silver) expect(silver).toContain(p);
      for (const a of c.aggregates) expect(goldColumns(c, a).map((x) => x.name)).toEqual(expect.arrayContaining([...a.groupBy, ...a.measures.map((m) => m.name)]));
    }
  });

  // Tier 1 writes its placement and source columns over a payload field of the same name, and
  // Delta and DuckDB match names without case: a contract field named `bucket` or `Status`
  // would be lost or stop bronze. Contracts are code, so a clash fails here, before a release.
  it('gives every contract column (all versions) a name no other column of its tables has, ignoring case', () => {
    for (const c of Object.values(CONTRACTS)) {
      const contract = contractColumns(c, c.versions.map((v) => v.version)).map((x) => x.name);
      const tables = [
        bronzeColumns(contract.map((name) => ({ name, type: 'string', nullable: true }))).map((x) => x.name),
        ...c.aggregates.map((a) => goldColumns(c, a).map((x) => x.name).filter((name) => !a.groupBy.includes(name))),
      ];
      for (const names of tables) {
        const lower = names.map((n) => n.toLowerCase());
        expect(lower.filter((n, i) => lower.indexOf(n) !== i)).toEqual([]);
      }
      const own = new Set(tables.flat().filter((n) => !contract.includes(n)).map((n) => n.toLowerCase()));
      expect(contract.filter((n) => own.has(n.toLowerCase()))).toEqual([]);
    }
  });

  it('follows the writer versions seen: v2 adds coupon_code as a nullable column', () => {
    const v1 = contractColumns(CONTRACTS.orders, [1]).map((c) => c.name);
    const both = contractColumns(CONTRACTS.orders, [2, 1]);
    expect(v1).not.toContain('coupon_code');
    expect(both.find((c) => c.name === 'coupon_code')).toMatchObject({ type: 'string', nullable: true });
    expect(both.find((c) => c.name === 'event_time')).toMatchObject({ type: 'timestamp' });
  });

  it('keys silver by entity for state contracts and by entity + event_id for append ones', () => {
    expect(silverKeys(CONTRACTS.inventory)).toEqual(['sku', 'warehouse_id']);
    expect(silverKeys(CONTRACTS.clickstream)).toEqual(['user_id', 'event_id']);
  });
});
