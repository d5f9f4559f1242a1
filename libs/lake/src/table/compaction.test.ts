import { stringifyJson } from '../log/json';
import { mergeStats } from './compaction';
import type { DeltaField } from './schema';

const field = (name: string, type: DeltaField['type']): DeltaField => ({ name, type, nullable: true, metadata: {} });

describe('mergeStats (compaction output stats from input stats)', () => {
  it('merges counts, mins and maxes exactly, bigints included', () => {
    const fields = [field('id', 'long'), field('ts', 'timestamp'), field('s', 'string')];
    const out = mergeStats(
      [
        { numRecords: 2, minValues: { id: 5, ts: '2026-01-02T00:00:00.000Z', s: 'b' }, maxValues: { id: 2n ** 60n, ts: '2026-01-03T00:00:00.000Z', s: 'q' }, nullCount: { id: 0, ts: 0, s: 1 } },
        { numRecords: 3, minValues: { id: -1, ts: '2026-01-01T00:00:00.000Z', s: 'a' }, maxValues: { id: 7, ts: '2026-01-01T10:00:00.000Z', s: 'z' }, nullCount: { id: 1, ts: 0, s: 0 } },
      ],
      fields,
      5,
    );
    expect(stringifyJson(out)).toBe(
      '{"numRecords":5,"minValues":{"id":-1,"ts":"2026-01-01T00:00:00.000Z","s":"a"},"maxValues":{"id":1152921504606846976,"ts":"2026-01-03T00:00:00.000Z","s":"z"},"nullCount":{"id":1,"ts":0,"s":1}}',
    );
  });

  it('drops a range when any input lacks it, skips all-null inputs, never merges non-ASCII strings or decimals', () => {
    const fields = [field('a', 'long'), field('n', 'string'), field('d', 'decimal(10,2)'), field('u', 'string')];
    const out = mergeStats(
      [
        { numRecords: 2, minValues: { a: 1, d: 1.5, u: 'é' }, maxValues: { a: 2, d: 2.5, u: 'ö' }, nullCount: { a: 0, n: 2, d: 0, u: 0 } },
        { numRecords: 1, minValues: { n: 'x', d: 1 }, maxValues: { n: 'x', d: 1 }, nullCount: { n: 0, d: 0, u: 0 } },
      ],
      fields,
      3,
    );
    expect(out.minValues).toEqual({ n: 'x' });
    expect(out.nullCount).toEqual({ n: 2, d: 0, u: 0 }); // a's null count unknown in the 2nd file
  });
});
