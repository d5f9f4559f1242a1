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
