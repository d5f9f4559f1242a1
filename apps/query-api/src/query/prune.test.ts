import { pruneFiles, type FileFacts } from './prune';
import type { Filter } from './query-types';
import type { TableShape } from './table-schema';

const shape: TableShape = {
  columns: [
    { name: 'bucket', type: 'integer', nullable: false },
    { name: 'day', type: 'date', nullable: true },
    { name: 'id', type: 'string', nullable: false },
    { name: 'qty', type: 'long', nullable: true },
    { name: 'ts', type: 'timestamp', nullable: true },
    { name: 'note', type: 'string', nullable: true },
  ],
  partitionColumns: ['bucket', 'day'],
};

type F = FileFacts & { name: string };
const file = (name: string, bucket: string, day: string | null, stats?: FileFacts['stats']): F => ({
  name,
  partitionValues: { bucket, day },
  stats,
});
const files: F[] = [
  file('a', '1', '2026-01-01', {
    numRecords: 10,
    minValues: { id: 'a0', qty: 1, ts: '2026-01-01T00:00:00.000Z' },
    maxValues: { id: 'a9', qty: 10, ts: '2026-01-01T11:59:59.999Z' },
    nullCount: { id: 0, qty: 0, ts: 0, note: 10 },
  }),
  file('b', '2', '2026-01-02', {
    numRecords: 10,
    minValues: { id: 'b0', qty: 11, ts: '2026-01-02T00:00:00.000Z' },
    maxValues: { id: 'b9', qty: 20, ts: '2026-01-02T23:59:59.999Z' },
    nullCount: { id: 0, qty: 2, ts: 0, note: 0 },
  }),
  file('c', '3', null), // no stats: always read unless a partition rules it out
];
const names = (where: Filter[]) => pruneFiles(files, where, shape).map((f) => f.name);

describe('pruneFiles', () => {
  it.each<[string, Filter[], string[]]>([
    ['no filter', [], ['a', 'b', 'c']],
    ['partition =', [{ column: 'bucket', op: '=', value: 2 }], ['b']],
    ['partition in', [{ column: 'bucket', op: 'in', value: [1, 3] }], ['a', 'c']],
    ['null partition is null', [{ column: 'day', op: 'is null' }], ['c']],
    ['null partition never compares', [{ column: 'day', op: '>=', value: '2026-01-01' }], ['a', 'b']],
    ['stats =', [{ column: 'qty', op: '=', value: 15 }], ['b', 'c']],
    ['stats <', [{ column: 'qty', op: '<', value: 5 }], ['a', 'c']],
    ['stats > at the edge keeps the file', [{ column: 'qty', op: '>', value: 10 }], ['a', 'b', 'c']],
    ['stats between', [{ column: 'qty', op: 'between', value: [21, 30] }], ['c']],
    ['string prefix', [{ column: 'id', op: 'prefix', value: 'b' }], ['b', 'c']],
    ['string prefix shorter than bounds', [{ column: 'id', op: 'prefix', value: 'a' }], ['a', 'c']],
    ['timestamp range', [{ column: 'ts', op: '>=', value: '2026-01-01T12:00:00Z' }], ['b', 'c']],
    ['timestamp with micros at the max keeps the file', [{ column: 'ts', op: '>=', value: '2026-01-01T11:59:59.999500Z' }], ['a', 'b', 'c']],
    ['all-null column', [{ column: 'note', op: '=', value: 'x' }], ['b', 'c']],
    ['is null on no nulls', [{ column: 'id', op: 'is null' }], ['c']],
    ['is not null on all nulls', [{ column: 'note', op: 'is not null' }], ['b', 'c']],
    ['or keeps either side', [{ or: [{ column: 'bucket', op: '=', value: 1 }, { column: 'qty', op: '>', value: 18 }] }], ['a', 'b', 'c']],
    ['and needs both', [{ and: [{ column: 'bucket', op: '=', value: 1 }, { column: 'qty', op: '>', value: 18 }] }], []],
    ['!= is never used to prune', [{ column: 'bucket', op: '!=', value: 1 }], ['a', 'b', 'c']],
  ])('%s', (_name, where, expected) => {
    expect(names(where)).toEqual(expected);
  });

  // The query casts a value to FLOAT for a float column, so 0.70000001 matches a stored 0.7f, whose
  // stats read "0.7": compared as doubles, the file was pruned and the row went missing.
  it('compares a 32-bit float column in single precision, as the query does', () => {
    const floats: TableShape = { columns: [{ name: 'x', type: 'float', nullable: true }, { name: 'y', type: 'double', nullable: true }], partitionColumns: [] };
    const f: FileFacts = { partitionValues: {}, stats: { numRecords: 1, minValues: { x: 0.7, y: 0.7 }, maxValues: { x: 0.7, y: 0.7 }, nullCount: { x: 0, y: 0 } } };
    expect(pruneFiles([f], [{ column: 'x', op: '=', value: 0.70000001 }], floats)).toHaveLength(1);
    expect(pruneFiles([f], [{ column: 'x', op: '>', value: 0.7000001 }], floats)).toHaveLength(0); // another float
    expect(pruneFiles([f], [{ column: 'y', op: '=', value: 0.70000001 }], floats)).toHaveLength(0); // a double stays exact
  });

  it('compares strings bytewise as Parquet does (UTF-8, not UTF-16)', () => {
    const f = [file('x', '1', null, { numRecords: 1, minValues: { id: '\uffff' }, maxValues: { id: '\u{1F600}' }, nullCount: { id: 0 } })];
    // In UTF-8 U+FFFF (EF BF BF) < U+1F600 (F0 9F 98 80); in UTF-16 the order flips.
    expect(pruneFiles(f, [{ column: 'id', op: '=', value: '\u{1F600}' }], shape)).toHaveLength(1);
  });

  it('prunes only on the given columns when asked (merge-on-read with a pending tail)', () => {
    const where: Filter[] = [{ column: 'bucket', op: '=', value: 1 }, { column: 'qty', op: '>', value: 100 }];
    expect(pruneFiles(files, where, shape).map((f) => f.name)).toEqual([]);
    expect(pruneFiles(files, where, shape, new Set(['bucket', 'id'])).map((f) => f.name)).toEqual(['a']);
  });

  it('handles bigint statistics from lossless parsing', () => {
    const f = [file('x', '1', null, { numRecords: 1, minValues: { qty: 2n ** 60n }, maxValues: { qty: 2n ** 61n }, nullCount: { qty: 0 } })];
    expect(pruneFiles(f, [{ column: 'qty', op: '<', value: 5 }], shape)).toHaveLength(0);
    expect(pruneFiles(f, [{ column: 'qty', op: '=', value: (2n ** 60n + 1n).toString() }], shape)).toHaveLength(1);
  });

  it('matches an in list against file ranges in any order, at the edges, with sub-millisecond timestamps', () => {
    const where = (column: string, value: (string | number)[]): Filter[] => [{ column, op: 'in', value }];
    expect(names(where('qty', [30, 0, 25]))).toEqual(['c']); // all outside both files
    expect(names(where('qty', [30, 10, 0]))).toEqual(['a', 'c']); // 10: a's max
    expect(names(where('qty', [11, 99, -5]))).toEqual(['b', 'c']); // 11: b's min
    expect(names(where('qty', [15, 5]))).toEqual(['a', 'b', 'c']);
    expect(names(where('id', ['zz', 'b5', 'a']))).toEqual(['b', 'c']); // 'a' < 'a0'
    expect(names(where('ts', ['2026-01-03T00:00:00Z', '2026-01-01T11:59:59.999700Z']))).toEqual(['a', 'c']);
    expect(names(where('ts', ['2026-01-01T11:59:59.999700Z', '2026-01-01T11:59:59.999Z']))).toEqual(['a', 'c']); // same ms, two ranges
  });

  // A request's in lists used to be converted again for every file, before any concurrency limit
  // or timeout applied: 1,000 values against thousands of files blocked the event loop for seconds.
  it("converts a condition's values once, not once per file", () => {
    const many = Array.from({ length: 5000 }, (_, i) =>
      file(`f${i}`, '1', '2026-01-01', { numRecords: 1, minValues: { id: `k${String(i).padStart(5, '0')}` }, maxValues: { id: `k${String(i).padStart(5, '0')}` }, nullCount: { id: 0 } }),
    );
    const list = Array.from({ length: 1000 }, (_, i) => `z${i}`).concat(['k00042', 'k04999']);
    let reads = 0; // of the list's values
    const counted = new Proxy(list, {
      get: (target, key, receiver) => {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(pruneFiles(many, [{ column: 'id', op: 'in', value: counted }], shape).map((f) => f.name)).toEqual(['f42', 'f4999']);
    expect(reads).toBe(list.length);
  });

  it('past the budget of files × conditions, prunes on top-level conditions alone (and/or groups may match)', () => {
    const many = Array.from({ length: 5000 }, (_, i) => file(`f${i}`, String(i), '2026-01-01', { numRecords: 1, minValues: { qty: i }, maxValues: { qty: i }, nullCount: { qty: 0 } }));
    const group: Filter = { or: Array.from({ length: 200 }, () => ({ column: 'qty', op: '<', value: 10 })) };
    const top: Filter = { column: 'bucket', op: '<', value: 100 };
    const byTop = pruneFiles(many, [top], shape);
    expect(byTop.length).toBeLessThan(200);
    // 5,000 files × 201 conditions is past PRUNE_BUDGET: the group is not evaluated, the bucket condition still prunes.
    expect(pruneFiles(many, [top, group], shape)).toEqual(byTop);
    // Within the budget (1,000 files) the group prunes too.
    // (A bound equal to the statistics is kept, conservatively: f10 for qty < 10.)
    expect(pruneFiles(many.slice(0, 1000), [top, group], shape).map((f) => f.name)).toEqual(Array.from({ length: 11 }, (_, i) => `f${i}`));
  });
});
