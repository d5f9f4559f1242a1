import { CONTRACTS, type GoldAggregate } from '@sluice/contracts';
import { definitionChanges, goldDefinition } from './table-set';

const aggregate: GoldAggregate = {
  name: 'status_minute',
  table: 'gold_x',
  windowMs: 60_000,
  groupBy: ['status', 'currency'],
  measures: [
    { name: 'zz_orders', fn: 'count' },
    { name: 'aa_amount', fn: 'sum', column: 'total_cents' },
  ],
};

describe('the recorded definition of a gold aggregate', () => {
  it('means the same however it was written: key order, measure and group order, a count with a column', () => {
    const rewritten = JSON.stringify({
      measures: [
        { fn: 'sum', column: 'total_cents', name: 'aa_amount' },
        { column: 'anything', name: 'zz_orders', fn: 'count' },
      ],
      groupBy: ['currency', 'status'],
      windowMs: 60_000,
    });
    expect(definitionChanges(rewritten, aggregate)).toEqual([]);
    expect(definitionChanges(goldDefinition(aggregate), { ...aggregate, measures: [...aggregate.measures].reverse() })).toEqual([]);
  });

  it('sorts names by code unit, not by the locale (aa after zz in Danish)', () => {
    const sorted = JSON.parse(goldDefinition(aggregate)) as { measures: { name: string }[] };
    expect(sorted.measures.map((m) => m.name)).toEqual(['aa_amount', 'zz_orders']);
  });

  it('names each real difference', () => {
    const recorded = goldDefinition(aggregate);
    expect(definitionChanges(recorded, { ...aggregate, windowMs: 300_000, groupBy: ['status'] })).toEqual(['window 60000 ms → 300000 ms', 'groups currency, status → status']);
    expect(definitionChanges(recorded, { ...aggregate, measures: [aggregate.measures[0], { name: 'aa_amount', fn: 'sum', column: 'item_count' }] })).toEqual([
      'measure aa_amount: sum(total_cents) → sum(item_count)',
    ]);
  });

  it.each([['not json', '{oops'], ['null', 'null'], ['another shape', '{"windowMs":60000}'], ['a measure without a name', '{"windowMs":60000,"groupBy":[],"measures":[{"fn":"count"}]}']])(
    'calls a recorded value that is %s unreadable rather than throwing',
    (_case, recorded) => {
      expect(definitionChanges(recorded, aggregate)).toEqual([expect.stringMatching(/^an unreadable recorded definition/)]);
    },
  );

  it('holds for the catalog: every declared aggregate reads back as itself', () => {
    for (const contract of Object.values(CONTRACTS)) {
      for (const a of contract.aggregates) expect(definitionChanges(goldDefinition(a), a)).toEqual([]);
    }
  });
});
