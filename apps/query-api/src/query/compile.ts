import { queryError } from '../errors';
import { MAX_LEAF_CONDITIONS } from './query-schema';
import { BUCKET_INTERVALS, type Aggregate, type Condition, type Filter, leafConditions, type QueryRequest, type Scalar } from './query-types';
import { type ColumnInfo, type TableShape, duckTypeOf, familyOf, quoteIdent } from './table-schema';
import { normalizeValue } from './values';

/** A query turned into SQL: `$n` placeholders, one parameter per placeholder, in order. */
export interface CompiledQuery {
  sql: string;
  params: Scalar[];
  /** Output column names, in order. */
  columns: string[];
  /**
   * How to turn each output back into JSON: DuckDB hands integers beyond 32 bits as strings and
   * timestamps as `YYYY-MM-DD hh:mm:ss+00`; the service makes them numbers and ISO-8601.
   */
  kinds: Record<string, OutputKind>;
  /** Rows the client asked for; the SQL fetches one more to tell whether the answer was cut. */
  limit: number;
}

/** JSON treatment of an output column. */
export type OutputKind = 'integer' | 'timestamp' | 'other';

export interface CompileOptions {
  /** The SQL relation to read from, supplied by the lake adapter (never by a client). */
  relation: string;
  /** Most rows one answer may hold; a larger `limit` is refused. */
  maxRows: number;
}

/**
 * Compiles a validated JSON query against the table's columns. Identifiers come only from
 * `shape` (quoted); every client value becomes a parameter cast to the column's type.
 * Throws catalogued errors: QUERY_COLUMN_UNKNOWN, QUERY_VALUE_INVALID, QUERY_SHAPE_INVALID,
 * QUERY_TOO_COMPLEX.
 */
export function compileQuery(query: QueryRequest, shape: TableShape, options: CompileOptions): CompiledQuery {
  const conditions = leafConditions(query.where);
  if (conditions > MAX_LEAF_CONDITIONS) {
    throw queryError('QUERY_TOO_COMPLEX', `${conditions} conditions in where; at most ${MAX_LEAF_CONDITIONS}`, { conditions, maxConditions: MAX_LEAF_CONDITIONS });
  }
  const byName = new Map(shape.columns.map((c) => [c.name, c]));
  const column = (name: string, where: string): ColumnInfo => {
    const c = byName.get(name);
    if (!c) throw queryError('QUERY_COLUMN_UNKNOWN', `${JSON.stringify(name)} (in ${where})`, { column: name, where });
    return c;
  };
  const params: Scalar[] = [];
  const param = (value: Scalar, c: ColumnInfo): string => {
    params.push(value);
    // A float's text goes to DOUBLE first, then FLOAT, as pruning rounds it (Math.fround of the
    // double): cast straight from text, 1.0000000596046448 was 1.0000001f to DuckDB and 1f to
    // pruning, which skipped a file holding 1.0000001f that the query matched.
    if (c.type === 'float') return `CAST(CAST($${params.length} AS DOUBLE) AS FLOAT)`;
    return `CAST($${params.length} AS ${duckTypeOf(c.type)})`;
  };

  const aggregates = query.aggregates ?? [];
  const groupBy = query.groupBy ?? [];
  const grouped = aggregates.length > 0 || groupBy.length > 0 || query.timeBucket !== undefined;

  /** `distinguishes`: the output tells answer rows apart (a group key, or any output when not grouping; not an aggregate). */
  const outputs: { name: string; sql: string; kind: OutputKind; distinguishes: boolean }[] = [];
  const groupExprs: string[] = [];
  const used = new Set<string>();
  const addOutput = (name: string, sql: string, kind: OutputKind, distinguishes = true): void => {
    if (used.has(name)) throw queryError('QUERY_SHAPE_INVALID', `output name ${JSON.stringify(name)} appears twice`);
    used.add(name);
    outputs.push({ name, sql, kind, distinguishes });
  };

  if (query.timeBucket) {
    const c = column(query.timeBucket.column, 'timeBucket');
    const family = familyOf(c.type);
    if (family !== 'timestamp' && family !== 'date') {
      throw queryError('QUERY_SHAPE_INVALID', `timeBucket needs a timestamp or date column, ${c.name} is ${c.type}`);
    }
    // The interval text comes from a closed table keyed by the validated enum, never from the client.
    const expr = `time_bucket(INTERVAL '${BUCKET_INTERVALS[query.timeBucket.interval]}', ${quoteIdent(c.name)})`;
    addOutput(query.timeBucket.as ?? 'bucket', expr, kindOf(c));
    groupExprs.push(expr);
  }
  for (const name of groupBy) {
    const c = column(name, 'groupBy');
    if (familyOf(c.type) === 'other') throw queryError('QUERY_SHAPE_INVALID', `cannot group by nested column ${c.name}`);
    addOutput(c.name, quoteIdent(c.name), kindOf(c));
    groupExprs.push(quoteIdent(c.name));
  }
  if (grouped) {
    for (const name of query.select ?? []) {
      column(name, 'select');
      if (!groupBy.includes(name)) {
        throw queryError('QUERY_SHAPE_INVALID', `${JSON.stringify(name)} is selected but neither grouped nor aggregated`);
      }
    }
    for (const agg of aggregates) {
      const { sql, kind } = aggregateSql(agg, column);
      addOutput(agg.as ?? defaultAlias(agg), sql, kind, false);
    }
  } else {
    const select = query.select ?? shape.columns.map((c) => c.name);
    for (const name of select) {
      const c = column(name, 'select');
      addOutput(c.name, quoteIdent(c.name), kindOf(c));
    }
  }
  if (outputs.length === 0) throw queryError('QUERY_SHAPE_INVALID', 'the query selects nothing');

  const whereSql = (query.where ?? []).map((f) => filterSql(f, column, param));

  const order = (query.orderBy ?? []).map((o) => {
    // Ordering names an output column; without grouping any table column will do.
    let expr: string;
    if (used.has(o.column)) expr = quoteIdent(o.column);
    else if (!grouped) expr = quoteIdent(column(o.column, 'orderBy').name);
    else throw queryError('QUERY_COLUMN_UNKNOWN', `${JSON.stringify(o.column)} (in orderBy) is not an output of the query`, { column: o.column, where: 'orderBy' });
    return `${expr} ${o.dir === 'desc' ? 'DESC' : 'ASC'} NULLS LAST`;
  });
  const offset = query.offset ?? 0;
  if (order.length > 0) {
    // Rows tied on the ordered columns came back in whatever order DuckDB's threads produced
    // them, so pages repeated some rows and skipped others: the outputs that tell rows apart
    // break ties (rows equal in all of them are the same answer whichever page shows them).
    const ordered = new Set((query.orderBy ?? []).map((o) => o.column));
    for (const o of outputs) if (o.distinguishes && !ordered.has(o.name)) order.push(`${quoteIdent(o.name)} ASC NULLS LAST`);
  } else if (offset > 0) {
    throw queryError('QUERY_SHAPE_INVALID', 'offset needs orderBy: without an order, pages may repeat or skip rows');
  }

  const limit = query.limit ?? options.maxRows;
  if (limit > options.maxRows) {
    throw queryError('QUERY_TOO_COMPLEX', `limit ${limit} exceeds the maximum of ${options.maxRows} rows per answer`, { maxRows: options.maxRows });
  }

  let sql = `SELECT ${outputs.map((o) => `${o.sql} AS ${quoteIdent(o.name)}`).join(', ')} FROM ${options.relation}`;
  if (whereSql.length > 0) sql += ` WHERE ${whereSql.join(' AND ')}`;
  if (groupExprs.length > 0) sql += ` GROUP BY ${groupExprs.join(', ')}`;
  if (order.length > 0) sql += ` ORDER BY ${order.join(', ')}`;
  // Integers validated by the schema and the maxRows check; written inline as DuckDB wants constants here.
  sql += ` LIMIT ${limit + 1} OFFSET ${offset}`;
  return { sql, params, columns: outputs.map((o) => o.name), kinds: Object.fromEntries(outputs.map((o) => [o.name, o.kind])), limit };
}

function defaultAlias(agg: Aggregate): string {
  return agg.column === '*' ? agg.fn : `${agg.fn}_${agg.column}`;
}

function kindOf(c: ColumnInfo): OutputKind {
  const family = familyOf(c.type);
  return family === 'integer' ? 'integer' : family === 'timestamp' ? 'timestamp' : 'other';
}

function aggregateSql(agg: Aggregate, column: (name: string, where: string) => ColumnInfo): { sql: string; kind: OutputKind } {
  if (agg.column === '*') {
    if (agg.fn !== 'count') throw queryError('QUERY_SHAPE_INVALID', `${agg.fn}(*) is not defined; only count(*)`);
    return { sql: 'count(*)', kind: 'integer' };
  }
  const c = column(agg.column, 'aggregates');
  const family = familyOf(c.type);
  const ident = quoteIdent(c.name);
  switch (agg.fn) {
    case 'count':
      return { sql: `count(${ident})`, kind: 'integer' };
    case 'count_distinct':
      if (family === 'other') throw queryError('QUERY_SHAPE_INVALID', `count_distinct over nested column ${c.name}`);
      return { sql: `count(DISTINCT ${ident})`, kind: 'integer' };
    case 'sum':
    case 'avg':
      if (family !== 'integer' && family !== 'decimal' && family !== 'float') {
        throw queryError('QUERY_SHAPE_INVALID', `${agg.fn} needs a numeric column, ${c.name} is ${c.type}`);
      }
      return { sql: `${agg.fn}(${ident})`, kind: agg.fn === 'sum' && family === 'integer' ? 'integer' : 'other' };
    case 'min':
    case 'max':
      if (family === 'other') throw queryError('QUERY_SHAPE_INVALID', `${agg.fn} over nested column ${c.name}`);
      return { sql: `${agg.fn}(${ident})`, kind: kindOf(c) };
  }
}

function filterSql(
  filter: Filter,
  column: (name: string, where: string) => ColumnInfo,
  param: (value: Scalar, c: ColumnInfo) => string,
): string {
  if ('and' in filter) return `(${filter.and.map((f) => filterSql(f, column, param)).join(' AND ')})`;
  if ('or' in filter) return `(${filter.or.map((f) => filterSql(f, column, param)).join(' OR ')})`;
  return conditionSql(filter, column(filter.column, 'where'), param);
}

function conditionSql(cond: Condition, c: ColumnInfo, param: (value: Scalar, c: ColumnInfo) => string): string {
  const ident = quoteIdent(c.name);
  const family = familyOf(c.type);
  if (family === 'other') throw queryError('QUERY_SHAPE_INVALID', `cannot filter on nested column ${c.name}`);
  const one = (): Scalar => {
    if (cond.value === undefined || Array.isArray(cond.value)) {
      throw queryError('QUERY_VALUE_INVALID', `${cond.op} on ${c.name} needs one value`, { column: c.name });
    }
    return normalizeValue(cond.value, c);
  };
  switch (cond.op) {
    case '=':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      return `${ident} ${cond.op} ${param(one(), c)}`;
    case 'in': {
      if (!Array.isArray(cond.value)) throw queryError('QUERY_VALUE_INVALID', `in on ${c.name} needs an array of values`, { column: c.name });
      return `${ident} IN (${cond.value.map((v) => param(normalizeValue(v, c), c)).join(', ')})`;
    }
    case 'between': {
      if (!Array.isArray(cond.value) || cond.value.length !== 2) {
        throw queryError('QUERY_VALUE_INVALID', `between on ${c.name} needs [low, high]`, { column: c.name });
      }
      const [lo, hi] = cond.value.map((v) => normalizeValue(v, c));
      return `${ident} BETWEEN ${param(lo, c)} AND ${param(hi, c)}`;
    }
    case 'is null':
    case 'is not null':
      if (cond.value !== undefined) throw queryError('QUERY_VALUE_INVALID', `${cond.op} takes no value`, { column: c.name });
      return `${ident} ${cond.op === 'is null' ? 'IS NULL' : 'IS NOT NULL'}`;
    case 'prefix': {
      if (family !== 'string') throw queryError('QUERY_SHAPE_INVALID', `prefix needs a string column, ${c.name} is ${c.type}`);
      // starts_with takes the prefix as data, so %, _ and quotes in it mean nothing special.
      return `starts_with(${ident}, ${param(one(), c)})`;
    }
  }
}
