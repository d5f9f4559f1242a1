import { isSluiceError } from '@sluice/errors';
import { compileQuery } from './compile';
import type { QueryRequest } from './query-types';
import type { TableShape } from './table-schema';

const shape: TableShape = {
  columns: [
    { name: 'order_id', type: 'string', nullable: false },
    { name: 'status', type: 'string', nullable: true },
    { name: 'amount', type: 'decimal(12,2)', nullable: true },
    { name: 'qty', type: 'long', nullable: true },
    { name: 'score', type: 'double', nullable: true },
    { name: 'paid', type: 'boolean', nullable: true },
    { name: 'day', type: 'date', nullable: true },
    { name: 'event_time', type: 'timestamp', nullable: false },
    { name: 'tags', type: 'array', nullable: true },
    { name: 'we"ird', type: 'string', nullable: true },
    { name: 'bucket', type: 'integer', nullable: false },
  ],
  partitionColumns: ['bucket'],
};
const opts = { relation: 'snap', maxRows: 1000 };

function codeOf(q: QueryRequest): string {
  try {
    compileQuery(q, shape, opts);
  } catch (e) {
    if (isSluiceError(e)) return e.code;
    throw e;
  }
  return 'OK';
}

describe('compileQuery', () => {
  it('selects every column by default, quoted, and fetches limit+1 rows', () => {
    const c = compileQuery({ limit: 10 }, shape, opts);
    expect(c.sql).toMatch(/^SELECT "order_id" AS "order_id", .* FROM snap LIMIT 11 OFFSET 0$/);
    expect(c.sql).toContain('"we""ird" AS "we""ird"');
    expect(c.columns).toHaveLength(shape.columns.length);
    expect(c.limit).toBe(10);
  });

  it('turns every value into a typed parameter, never into SQL text', () => {
    const c = compileQuery(
      {
        select: ['order_id'],
        where: [
          { column: 'status', op: '=', value: "x' OR 1=1 --" },
          { column: 'qty', op: 'between', value: [1, '9007199254740993'] },
          { column: 'event_time', op: '>=', value: '2026-01-01T00:00:00Z' },
          { or: [{ column: 'order_id', op: 'prefix', value: '%_' }, { column: 'paid', op: 'is null' }] },
          { column: 'day', op: 'in', value: ['2026-01-01', '2026-01-02'] },
        ],
      },
      shape,
      opts,
    );
    expect(c.sql).toBe(
      'SELECT "order_id" AS "order_id" FROM snap WHERE "status" = CAST($1 AS VARCHAR) AND "qty" BETWEEN CAST($2 AS BIGINT) AND CAST($3 AS BIGINT)' +
        ' AND "event_time" >= CAST($4 AS TIMESTAMPTZ) AND (starts_with("order_id", CAST($5 AS VARCHAR)) OR "paid" IS NULL)' +
        ' AND "day" IN (CAST($6 AS DATE), CAST($7 AS DATE)) LIMIT 1001 OFFSET 0',
    );
    expect(c.params).toEqual(["x' OR 1=1 --", '1', '9007199254740993', '2026-01-01T00:00:00Z', '%_', '2026-01-01', '2026-01-02']);
  });

  it('groups, aggregates and buckets time with a fixed interval text', () => {
    const c = compileQuery(
      {
        timeBucket: { column: 'event_time', interval: '5m' },
        groupBy: ['status'],
        aggregates: [
          { fn: 'count', column: '*', as: 'n' },
          { fn: 'sum', column: 'amount' },
          { fn: 'count_distinct', column: 'order_id', as: 'orders' },
          { fn: 'avg', column: 'score' },
          { fn: 'min', column: 'event_time' },
        ],
        orderBy: [{ column: 'bucket' }, { column: 'n', dir: 'desc' }],
        limit: 5,
        offset: 10,
      },
      shape,
      opts,
    );
    expect(c.sql).toBe(
      `SELECT time_bucket(INTERVAL '5 minutes', "event_time") AS "bucket", "status" AS "status", count(*) AS "n", sum("amount") AS "sum_amount",` +
        ` count(DISTINCT "order_id") AS "orders", avg("score") AS "avg_score", min("event_time") AS "min_event_time" FROM snap` +
        ` GROUP BY time_bucket(INTERVAL '5 minutes', "event_time"), "status" ORDER BY "bucket" ASC NULLS LAST, "n" DESC NULLS LAST, "status" ASC NULLS LAST LIMIT 6 OFFSET 10`,
    );
    expect(c.columns).toEqual(['bucket', 'status', 'n', 'sum_amount', 'orders', 'avg_score', 'min_event_time']);
  });

  it.each<[string, QueryRequest, string]>([
    ['unknown select column', { select: ['nope'] }, 'QUERY_COLUMN_UNKNOWN'],
    ['injection as a column name', { select: ['status" FROM x; --'] }, 'QUERY_COLUMN_UNKNOWN'],
    ['unknown filter column', { where: [{ column: '1=1', op: '=', value: 1 }] }, 'QUERY_COLUMN_UNKNOWN'],
    ['unknown order column when grouped', { groupBy: ['status'], orderBy: [{ column: 'qty' }] }, 'QUERY_COLUMN_UNKNOWN'],
    ['unknown aggregate column', { aggregates: [{ fn: 'sum', column: 'ghost' }] }, 'QUERY_COLUMN_UNKNOWN'],
    ['string for a long', { where: [{ column: 'qty', op: '=', value: '1; DROP TABLE x' }] }, 'QUERY_VALUE_INVALID'],
    ['fractional long', { where: [{ column: 'qty', op: '=', value: 1.5 }] }, 'QUERY_VALUE_INVALID'],
    ['long overflow', { where: [{ column: 'qty', op: '=', value: '9223372036854775808' }] }, 'QUERY_VALUE_INVALID'],
    ['integer overflow', { where: [{ column: 'bucket', op: '=', value: 2 ** 31 }] }, 'QUERY_VALUE_INVALID'],
    ['number for a string', { where: [{ column: 'status', op: '=', value: 1 }] }, 'QUERY_VALUE_INVALID'],
    ['zone-less timestamp', { where: [{ column: 'event_time', op: '<', value: '2026-01-01 00:00:00' }] }, 'QUERY_VALUE_INVALID'],
    ['bad date', { where: [{ column: 'day', op: '=', value: '2026-13-01' }] }, 'QUERY_VALUE_INVALID'],
    ['February 31st', { where: [{ column: 'day', op: '=', value: '2026-02-31' }] }, 'QUERY_VALUE_INVALID'],
    ['February 30th at noon', { where: [{ column: 'event_time', op: '>', value: '2026-02-30T12:00:00Z' }] }, 'QUERY_VALUE_INVALID'],
    ['string for a boolean', { where: [{ column: 'paid', op: '=', value: 'true' }] }, 'QUERY_VALUE_INVALID'],
    ['text for a double', { where: [{ column: 'score', op: '>', value: 'NaN' }] }, 'QUERY_VALUE_INVALID'],
    ['bad decimal', { where: [{ column: 'amount', op: '>', value: '1e5' }] }, 'QUERY_VALUE_INVALID'],
    // DuckDB rounds a cast beyond the scale: `<= 1.239` matched 1.24 in a decimal(12,2) column.
    ['decimal beyond its scale', { where: [{ column: 'amount', op: '<=', value: '1.239' }] }, 'QUERY_VALUE_INVALID'],
    ['decimal beyond its precision', { where: [{ column: 'amount', op: '=', value: -12345678901.5 }] }, 'QUERY_VALUE_INVALID'],
    ['timestamp without seconds (DuckDB refuses it)', { where: [{ column: 'event_time', op: '>', value: '2026-01-01T00:00Z' }] }, 'QUERY_VALUE_INVALID'],
    ['array for =', { where: [{ column: 'status', op: '=', value: ['a'] }] }, 'QUERY_VALUE_INVALID'],
    ['missing value', { where: [{ column: 'status', op: '<' }] }, 'QUERY_VALUE_INVALID'],
    ['scalar for in', { where: [{ column: 'status', op: 'in', value: 'a' }] }, 'QUERY_VALUE_INVALID'],
    ['three values for between', { where: [{ column: 'qty', op: 'between', value: [1, 2, 3] }] }, 'QUERY_VALUE_INVALID'],
    ['value for is null', { where: [{ column: 'status', op: 'is null', value: 'x' }] }, 'QUERY_VALUE_INVALID'],
    ['prefix on a number', { where: [{ column: 'qty', op: 'prefix', value: '1' }] }, 'QUERY_SHAPE_INVALID'],
    ['filter on a nested column', { where: [{ column: 'tags', op: 'is null' }] }, 'QUERY_SHAPE_INVALID'],
    ['sum of a string', { aggregates: [{ fn: 'sum', column: 'status' }] }, 'QUERY_SHAPE_INVALID'],
    ['sum(*)', { aggregates: [{ fn: 'sum', column: '*' }] }, 'QUERY_SHAPE_INVALID'],
    ['ungrouped select', { select: ['qty'], aggregates: [{ fn: 'count', column: '*' }] }, 'QUERY_SHAPE_INVALID'],
    ['duplicate output names', { groupBy: ['status'], aggregates: [{ fn: 'count', column: '*', as: 'status' }] }, 'QUERY_SHAPE_INVALID'],
    ['time bucket over a string', { timeBucket: { column: 'status', interval: '1m' } }, 'QUERY_SHAPE_INVALID'],
    ['empty select', { select: [] }, 'QUERY_SHAPE_INVALID'],
    ['limit above maxRows', { limit: 1001 }, 'QUERY_TOO_COMPLEX'],
    // Without an order, pages of one query may repeat or skip rows.
    ['offset without orderBy', { select: ['order_id'], limit: 10, offset: 10 }, 'QUERY_SHAPE_INVALID'],
    ['a long past 2^53 as a JSON number (digits already lost)', { where: [{ column: 'qty', op: '=', value: 9007199254740993 }] }, 'QUERY_VALUE_INVALID'],
    ['a decimal as a number in exponent notation', { where: [{ column: 'amount', op: '>', value: 1e-7 }] }, 'QUERY_VALUE_INVALID'],
    // Within the schema (64 per level) but 257 in all: pruning checks each against every file.
    [
      'more than 256 conditions in all',
      { where: [{ or: [...Array.from({ length: 4 }, () => ({ and: Array.from({ length: 64 }, () => ({ column: 'qty', op: '>' as const, value: 1 })) })), { column: 'qty', op: '=', value: 2 }] }] },
      'QUERY_TOO_COMPLEX',
    ],
  ])('refuses %s', (_name, q, code) => {
    expect(codeOf(q)).toBe(code);
  });

  it('orders by any table column when not grouping, ties broken by every output', () => {
    expect(compileQuery({ select: ['order_id', 'status'], orderBy: [{ column: 'event_time', dir: 'desc' }, { column: 'status' }] }, shape, opts).sql).toContain(
      'ORDER BY "event_time" DESC NULLS LAST, "status" ASC NULLS LAST, "order_id" ASC NULLS LAST LIMIT',
    );
  });

  it('binds floating-point values as their shortest text, so any magnitude casts (a whole JS number binds as BIGINT)', () => {
    const c = compileQuery({ select: ['order_id'], where: [{ column: 'score', op: '<', value: 1e19 }, { column: 'score', op: '>', value: -0.5 }] }, shape, opts);
    expect(c.params).toEqual(['10000000000000000000', '-0.5']);
    expect(c.sql).toContain('"score" < CAST($1 AS DOUBLE)');
    const floats: TableShape = { columns: [{ name: 'f', type: 'float', nullable: true }], partitionColumns: [] };
    expect(compileQuery({ where: [{ column: 'f', op: '<', value: 3.4e38 }] }, floats, opts).params).toEqual(['3.4e+38']);
    // Through DOUBLE, as pruning rounds it (Math.fround of the double), never straight from text.
    expect(compileQuery({ where: [{ column: 'f', op: '=', value: 1.0000000596046448 }] }, floats, opts).sql).toContain('"f" = CAST(CAST($1 AS DOUBLE) AS FLOAT)');
    expect(() => compileQuery({ where: [{ column: 'f', op: '<', value: 1e39 }] }, floats, opts)).toThrow(/out of range of a 32-bit float/);
    // The largest float as it prints (a double just above it) is in range; one that rounds past it is not.
    expect(compileQuery({ where: [{ column: 'f', op: '<=', value: 3.4028235e38 }] }, floats, opts).params).toEqual(['3.4028235e+38']);
    expect(() => compileQuery({ where: [{ column: 'f', op: '<', value: 3.4028236e38 }] }, floats, opts)).toThrow(/out of range of a 32-bit float/);
  });

  it('takes a decimal as a JSON number only where a double holds every value of the column (precision up to 15); as a string always', () => {
    const wide: TableShape = { columns: [{ name: 'd', type: 'decimal(38,20)', nullable: true }], partitionColumns: [] };
    const refused = (value: number) => () => compileQuery({ where: [{ column: 'd', op: '=', value }] }, wide, opts);
    // Digits lost before the check sees them: 1.0000000000000001 arrives as 1, the big one as …568000.
    for (const value of [1.0000000000000001, 12345678901234567891, 0.5]) expect(refused(value)).toThrow(/send the decimal as a string/);
    expect(compileQuery({ where: [{ column: 'd', op: '=', value: '1.0000000000000001' }] }, wide, opts).params).toEqual(['1.0000000000000001']);
    const narrow: TableShape = { columns: [{ name: 'd', type: 'decimal(15,4)', nullable: true }], partitionColumns: [] };
    expect(compileQuery({ where: [{ column: 'd', op: '=', value: 12345678901.2345 }] }, narrow, opts).params).toEqual(['12345678901.2345']);
    expect(compileQuery({ where: [{ column: 'd', op: '=', value: -1000000 }] }, narrow, opts).params).toEqual(['-1000000']);
    // More digits than the column holds is refused as such, before any could be lost unseen.
    expect(() => compileQuery({ where: [{ column: 'd', op: '=', value: 123456789012.345 }] }, narrow, opts)).toThrow(/digits before the point/);
  });

  it('accepts decimals within the column: trailing zeros past the scale, the most whole digits, a sign', () => {
    for (const value of ['1.230', '-9999999999.99', '0.5', 12.5, '0009999999999']) {
      expect(codeOf({ where: [{ column: 'amount', op: '=', value }] })).toBe('OK');
    }
  });

  it('accepts dates and times in the years 0001–0099 (Date.UTC maps them to 19xx)', () => {
    expect(codeOf({ where: [{ column: 'day', op: '=', value: '0050-01-01' }] })).toBe('OK');
    expect(codeOf({ where: [{ column: 'event_time', op: '>=', value: '0001-01-01T00:00:00Z' }] })).toBe('OK');
    expect(codeOf({ where: [{ column: 'day', op: '=', value: '0050-02-30' }] })).toBe('QUERY_VALUE_INVALID');
  });

  it('accepts the largest long exactly', () => {
    const c = compileQuery({ where: [{ column: 'qty', op: '<=', value: '9223372036854775807' }] }, shape, opts);
    expect(c.params).toEqual(['9223372036854775807']);
  });
});
