/**
 * The table shape query-api compiles against, received as data from the lake snapshot. Column
 * names here are the only identifiers that ever reach SQL.
 */
export interface ColumnInfo {
  name: string;
  /** Delta primitive type name (`string`, `long`, `timestamp`, `decimal(10,2)`, …) or `struct`/`array`/`map`. */
  type: string;
  nullable: boolean;
}

/** Columns and partitioning of one table version. */
export interface TableShape {
  columns: ColumnInfo[];
  partitionColumns: string[];
}

/** What a column's values look like, for validation and pruning. */
export type TypeFamily = 'integer' | 'decimal' | 'float' | 'string' | 'boolean' | 'date' | 'timestamp' | 'other';

const INTEGER_TYPES: Record<string, string> = { long: 'BIGINT', integer: 'INTEGER', short: 'SMALLINT', byte: 'TINYINT' };
const DECIMAL = /^decimal\((\d{1,2}),(\d{1,2})\)$/;

/** The family of a Delta type name. */
export function familyOf(type: string): TypeFamily {
  if (type in INTEGER_TYPES) return 'integer';
  if (DECIMAL.test(type)) return 'decimal';
  if (type === 'double' || type === 'float') return 'float';
  if (type === 'string') return 'string';
  if (type === 'boolean') return 'boolean';
  if (type === 'date') return 'date';
  if (type === 'timestamp') return 'timestamp';
  return 'other';
}

/**
 * The DuckDB type a parameter is cast to before it meets a column, so a value is compared in the
 * column's type (and a bad value fails in validation, not in DuckDB). Undefined for nested types,
 * which are never compared.
 */
export function duckTypeOf(type: string): string | undefined {
  if (type in INTEGER_TYPES) return INTEGER_TYPES[type];
  const dec = DECIMAL.exec(type);
  if (dec) return `DECIMAL(${Number(dec[1])},${Number(dec[2])})`;
  switch (type) {
    case 'double':
      return 'DOUBLE';
    case 'float':
      return 'FLOAT';
    case 'string':
      return 'VARCHAR';
    case 'boolean':
      return 'BOOLEAN';
    case 'date':
      return 'DATE';
    case 'timestamp':
      return 'TIMESTAMPTZ';
    default:
      return undefined;
  }
}

/** A double-quoted SQL identifier. Names come from the table schema, but quoting keeps any name inert. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
