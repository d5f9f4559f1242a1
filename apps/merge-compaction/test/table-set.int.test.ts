import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { CONTRACTS, type GoldAggregate } from '@sluice/contracts';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { contractColumns, silverColumns } from '../src/tables/layout';
import { BUCKETS_PROPERTY, GOLD_DEFINITION_PROPERTY, TableSet } from '../src/tables/table-set';

const orders = CONTRACTS.orders;

describe('gold tables against their aggregate', () => {
  let dir: string;
  beforeAll(async () => {
    dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `merge-gold-shape-${randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });
  // A fresh TableSet per call: a new process, with the release's aggregate.
  const tables = () => new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: 'g_' });

  // A release that adds a measure or a group to an aggregate whose table exists: the measure was
  // left out of every write without a word (the write keeps the table's columns), a group failed
  // each step with a merge-column error. Stored windows cannot gain either incrementally.
  it('refuses a table that lacks a measure or a group the aggregate now declares, naming them', async () => {
    const aggregate = orders.aggregates[0];
    const created = await tables().gold(orders, aggregate);
    expect((await created.snapshot()).schema.fields.map((f) => f.name)).toEqual(expect.arrayContaining(['status', 'orders', 'amount_cents']));
    await expect(tables().gold(orders, aggregate)).resolves.toBeDefined();

    const moreMeasures: GoldAggregate = { ...aggregate, measures: [...aggregate.measures, { name: 'items', fn: 'sum', column: 'item_count' }] };
    await expect(tables().gold(orders, moreMeasures)).rejects.toMatchObject({ code: 'MERGE_GOLD_SHAPE_CHANGED', retryable: false, details: { lacking: ['items'] } });
    const moreGroups: GoldAggregate = { ...aggregate, groupBy: [...aggregate.groupBy, 'currency'] };
    await expect(tables().gold(orders, moreGroups)).rejects.toMatchObject({ code: 'MERGE_GOLD_SHAPE_CHANGED', details: { lacking: ['currency'] } });
    // A count turned into a sum: same long type, but the stored windows hold counts and the
    // column refuses the nulls a sum can give.
    const countMeasure = aggregate.measures.find((m) => m.fn === 'count');
    expect(countMeasure).toBeDefined();
    const countToSum: GoldAggregate = { ...aggregate, measures: aggregate.measures.map((m) => (m === countMeasure ? { name: m.name, fn: 'sum', column: 'total_cents' } : m)) };
    await expect(tables().gold(orders, countToSum)).rejects.toMatchObject({ code: 'MERGE_GOLD_SHAPE_CHANGED', details: { changed: [countMeasure?.name] } });
    // And a sum turned into a count (nullable long to a not-null one): counts would be added to sums.
    const sumMeasure = aggregate.measures.find((m) => m.fn === 'sum');
    expect(sumMeasure).toBeDefined();
    const sumToCount: GoldAggregate = { ...aggregate, measures: aggregate.measures.map((m) => (m === sumMeasure ? { name: m.name, fn: 'count' } : m)) };
    await expect(tables().gold(orders, sumToCount)).rejects.toMatchObject({ code: 'MERGE_GOLD_SHAPE_CHANGED', details: { changed: [sumMeasure?.name] } });
    // The table is untouched: the original aggregate still opens it.
    await expect(tables().gold(orders, aggregate)).resolves.toBeDefined();
  });

  // Same columns, same types, another meaning: the table records the definition its windows were
  // computed with, and a release that changed it is refused rather than mixing two measures.
  it('refuses another window, a sum of another column or a dropped measure though the columns match', async () => {
    const aggregate = orders.aggregates[0];
    const created = await tables().gold(orders, aggregate);
    expect(JSON.parse((await created.snapshot()).configuration[GOLD_DEFINITION_PROPERTY])).toMatchObject({ windowMs: aggregate.windowMs });
    const sumMeasure = aggregate.measures.find((m) => m.fn === 'sum');
    expect(sumMeasure).toBeDefined();

    const longerWindow: GoldAggregate = { ...aggregate, windowMs: aggregate.windowMs * 5 };
    await expect(tables().gold(orders, longerWindow)).rejects.toMatchObject({
      code: 'MERGE_GOLD_SHAPE_CHANGED',
      details: { definition: [`window ${aggregate.windowMs} ms → ${aggregate.windowMs * 5} ms`] },
    });
    const otherColumn: GoldAggregate = { ...aggregate, measures: aggregate.measures.map((m) => (m === sumMeasure ? { ...m, column: 'item_count' } : m)) };
    await expect(tables().gold(orders, otherColumn)).rejects.toMatchObject({
      details: { definition: [`measure ${sumMeasure?.name}: sum(${sumMeasure?.column}) → sum(item_count)`] },
    });
    const dropped: GoldAggregate = { ...aggregate, measures: aggregate.measures.filter((m) => m !== sumMeasure) };
    await expect(tables().gold(orders, dropped)).rejects.toMatchObject({ details: { definition: [`measure ${sumMeasure?.name}: sum(${sumMeasure?.column}) → none`] } });
    // Order is no part of the definition.
    const reordered: GoldAggregate = { ...aggregate, measures: [...aggregate.measures].reverse() };
    await expect(tables().gold(orders, reordered)).resolves.toBeDefined();
  });
});

describe('bronze and silver tables against their contract\'s bucket count', () => {
  let dir: string;
  beforeAll(async () => {
    dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `merge-buckets-${randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });
  const tables = (prefix: string) => new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: prefix });
  const columns = contractColumns(orders, orders.versions.map((v) => v.version));

  // A release that changed a contract's bucket count went on with the old tables: an entity's
  // new rows went to another bucket than its stored row, and silver held it twice.
  it('records the count at creation and refuses a table recorded with another', async () => {
    const silver = await tables('b_').silver(orders, columns);
    await tables('b_').bronze(orders, columns);
    expect((await silver.snapshot()).configuration[BUCKETS_PROPERTY]).toBe(String(orders.buckets));
    await expect(tables('b_').silver(orders, columns)).resolves.toBeDefined();

    const rebucketed = { ...orders, buckets: orders.buckets * 2 };
    await expect(tables('b_').silver(rebucketed, columns)).rejects.toMatchObject({ code: 'MERGE_BUCKETS_CHANGED', retryable: false, details: { recorded: orders.buckets, declared: orders.buckets * 2 } });
    await expect(tables('b_').bronze(rebucketed, columns)).rejects.toMatchObject({ code: 'MERGE_BUCKETS_CHANGED' });
  });

  it('takes a table created before the count was recorded as it is', async () => {
    await LakeTable.create(new LocalStorage(path.join(dir, `old_${orders.tables.silver}`)), { name: `old_${orders.tables.silver}`, columns: silverColumns(columns), partitionColumns: [...orders.partitionColumns.silver] });
    await expect(tables('old_').silver({ ...orders, buckets: orders.buckets * 2 }, columns)).resolves.toBeDefined();
  });
});
