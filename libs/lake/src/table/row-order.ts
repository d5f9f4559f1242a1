import { ident } from '../duck';
import { lakeError } from '../errors';
import type { TableSchema } from './schema';

/** Units a timestamp or date column can be truncated to before ordering by it. */
export const TIME_UNITS = ['hour', 'day', 'week', 'month'] as const;
export type TimeUnit = (typeof TIME_UNITS)[number];

/**
 * One term of the order rows are written in: a column, or a timestamp/date column truncated to
 * a unit first. `[{ column: 'event_time', truncate: 'day' }, 'key_hash']` keeps each day's rows
 * together and, within a day, in key order: row groups then have narrow ranges of both, so a
 * filter on a day and a lookup by key each read few of them.
 */
export type SortKey = string | { readonly column: string; readonly truncate: TimeUnit };

/** LAKE_INVALID_INPUT unless every key names a column of `schema`, and a truncated one a timestamp or date with a known unit. */
export function checkSortKeys(keys: readonly SortKey[], schema: TableSchema): void {
  for (const key of keys) {
    const column = typeof key === 'string' ? key : key.column;
    const field = schema.fields.find((f) => f.name === column);
    if (!field) throw lakeError('LAKE_INVALID_INPUT', `sort column ${JSON.stringify(column)} is not in the table`);
    if (typeof key === 'string') continue;
    if (field.type !== 'timestamp' && field.type !== 'date') throw lakeError('LAKE_INVALID_INPUT', `sort column ${column} is truncated to a ${key.truncate} but is ${JSON.stringify(field.type)}, not a timestamp or date`);
    if (!TIME_UNITS.includes(key.truncate)) throw lakeError('LAKE_INVALID_INPUT', `sort column ${column}: unknown unit ${JSON.stringify(key.truncate)} (one of ${TIME_UNITS.join(', ')})`);
  }
}

/** The `ORDER BY` terms of `keys` (checked as {@link checkSortKeys}), columns qualified by `alias` when given. */
export function orderTermsSql(keys: readonly SortKey[], schema: TableSchema, alias?: string): string {
  checkSortKeys(keys, schema);
  return keys
    .map((key) => {
      const column = typeof key === 'string' ? key : key.column;
      const ref = alias ? `${alias}.${ident(column)}` : ident(column);
      return typeof key === 'string' ? ref : `date_trunc('${key.truncate}', ${ref})`;
    })
    .join(', ');
}
