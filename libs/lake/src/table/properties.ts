import { lakeError } from '../errors';
import { TABLE_PROPERTIES } from '../log/snapshot';

const UNIT_MS: Record<string, number> = {
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};

/**
 * A Delta duration property as read (another writer's included) in ms: `interval 7 days`, several units as Spark writes them
 * (`interval 7 days 12 hours`), `interval` optional; units millisecond to week, singular or
 * plural. Undefined for any other form.
 */
export function intervalMsOf(text: string): number | undefined {
  const tokens = text.trim().toLowerCase().replace(/^interval\s+/, '').split(/\s+/);
  if (tokens.length % 2 !== 0) return undefined;
  let ms = 0;
  for (let i = 0; i < tokens.length; i += 2) {
    const per = UNIT_MS[tokens[i + 1].replace(/s$/, '')];
    if (!/^\d{1,12}$/.test(tokens[i]) || per === undefined) return undefined;
    ms += Number(tokens[i]) * per;
  }
  return ms;
}

/**
 * A duration this library writes: `interval <n> <unit>` only, the one form delta-rs reads
 * (DELTA.md); throws LAKE_SCHEMA_INVALID on any other.
 */
export function parseInterval(text: string, property: string): number {
  if (!/^interval\s+\d{1,12}\s+(millisecond|second|minute|hour|day|week)s?$/i.test(text.trim())) {
    throw lakeError('LAKE_SCHEMA_INVALID', `${property} must look like 'interval <n> <unit>' (e.g. 'interval 7 days'), got ${JSON.stringify(text)}`);
  }
  return intervalMsOf(text) as number;
}

const ALLOWED_DELTA_PROPERTIES: Record<string, (v: string, k: string) => void> = {
  'delta.appendOnly': (v, k) => {
    if (v !== 'true' && v !== 'false') throw lakeError('LAKE_SCHEMA_INVALID', `${k} must be 'true' or 'false'`);
  },
  'delta.checkpointInterval': (v, k) => {
    if (!/^[1-9]\d*$/.test(v)) throw lakeError('LAKE_SCHEMA_INVALID', `${k} must be a positive integer`);
  },
  'delta.deletedFileRetentionDuration': (v, k) => void parseInterval(v, k),
  'delta.logRetentionDuration': (v, k) => void parseInterval(v, k),
};

// `sluice.parquet.rowGroupRows`: rows per Parquet row group in the files this library writes to
// the table (DuckDB's default, 122,880, when absent). `sluice.parquet.compression`: their codec
// (snappy when absent). Sluice properties, not Delta ones: other writers ignore them, readers
// need nothing (every codec allowed here is one Spark, Trino and delta-rs read). Smaller groups
// in a table written in key order let a point lookup read one group's worth of a file instead
// of all of it (row-group min/max), at some cost in compression; `uncompressed` trades bytes
// (about 1.8× for silver) for reads that skip decompression.
const ROW_GROUP_ROWS_PROPERTY = TABLE_PROPERTIES.rowGroupRows;
const COMPRESSION_PROPERTY = TABLE_PROPERTIES.compression;

/** Parquet codecs a table may name in `sluice.parquet.compression`. */
export const PARQUET_CODECS = ['snappy', 'uncompressed', 'zstd', 'gzip'] as const;
export type ParquetCodec = (typeof PARQUET_CODECS)[number];

/** How this library writes a table's Parquet files (from its properties). */
export interface ParquetLayout {
  /** Rows per row group; undefined = DuckDB's default. */
  readonly rowGroupRows?: number;
  readonly codec: ParquetCodec;
}

/**
 * The table's Parquet layout. A value this library would refuse at create (another Delta writer
 * may have set it) falls back to the default rather than every write failing.
 */
export function parquetLayoutOf(configuration: Readonly<Record<string, string>>): ParquetLayout {
  const rows = configuration[ROW_GROUP_ROWS_PROPERTY];
  const codec = configuration[COMPRESSION_PROPERTY];
  return {
    rowGroupRows: rows !== undefined && validRowGroupRows(rows) ? Number(rows) : undefined,
    codec: isCodec(codec) ? codec : 'snappy',
  };
}

/** The `COPY ... TO` options for a layout: `, COMPRESSION x[, ROW_GROUP_SIZE n]`. */
export function parquetCopyOptions(layout: ParquetLayout): string {
  return `, COMPRESSION ${layout.codec}${layout.rowGroupRows !== undefined ? `, ROW_GROUP_SIZE ${Math.floor(layout.rowGroupRows)}` : ''}`;
}

function isCodec(v: string | undefined): v is ParquetCodec {
  return (PARQUET_CODECS as readonly string[]).includes(v as string);
}

// DuckDB writes row groups in whole vectors of 2,048 rows.
function validRowGroupRows(v: string): boolean {
  return /^[1-9]\d{0,9}$/.test(v) && Number(v) % 2048 === 0;
}

function checkRowGroupRows(v: string, k: string): void {
  if (!validRowGroupRows(v)) throw lakeError('LAKE_SCHEMA_INVALID', `${k} must be a multiple of 2048 (DuckDB's vector size), got ${JSON.stringify(v)}`);
}

function checkCodec(v: string, k: string): void {
  if (!isCodec(v)) throw lakeError('LAKE_SCHEMA_INVALID', `${k} must be one of ${PARQUET_CODECS.join(', ')}, got ${JSON.stringify(v)}`);
}

/**
 * Validates table properties: the `delta.*` keys this library honours (others, such as
 * `delta.enableDeletionVectors` or column mapping, would need protocol features it refuses);
 * keys outside `delta.` are free-form, except `sluice.parquet.rowGroupRows` and `sluice.parquet.compression`.
 */
export function validateProperties(properties: Readonly<Record<string, string>>): void {
  for (const [k, v] of Object.entries(properties)) {
    if (typeof v !== 'string') throw lakeError('LAKE_SCHEMA_INVALID', `table property ${k} must be a string`);
    if (k === ROW_GROUP_ROWS_PROPERTY) checkRowGroupRows(v, k);
    if (k === COMPRESSION_PROPERTY) checkCodec(v, k);
    if (!k.startsWith('delta.')) continue;
    const check = ALLOWED_DELTA_PROPERTIES[k];
    if (!check) throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `table property ${k} is not supported (it needs protocol features this library does not write)`);
    check(v, k);
  }
}

/** Default `delta.deletedFileRetentionDuration`: one week. */
export const DEFAULT_FILE_RETENTION_MS = 7 * UNIT_MS.day;

/**
 * How long removed files stay recoverable: `delta.deletedFileRetentionDuration`, else the default
 * (7 days). Throws on a value it cannot read: vacuum must not guess a retention.
 */
export function fileRetentionMsOf(configuration: Readonly<Record<string, string>>): number {
  const configured = configuration[TABLE_PROPERTIES.deletedFileRetentionDuration];
  if (!configured) return DEFAULT_FILE_RETENTION_MS;
  const ms = intervalMsOf(configured);
  if (ms === undefined) throw lakeError('LAKE_SCHEMA_INVALID', `${TABLE_PROPERTIES.deletedFileRetentionDuration} ${JSON.stringify(configured)} cannot be read as a duration`);
  return ms;
}

/**
 * How long a snapshot or checkpoint keeps remove actions: the file retention, or, when another
 * writer set a value this library cannot read, the log retention's default (30 days: more than
 * the default file retention; a value it cannot read may have meant longer). Throwing here failed
 * every call of a long-lived handle after its first load (each later load drops expired
 * tombstones) and every checkpoint.
 */
export function tombstoneRetentionMsOf(configuration: Readonly<Record<string, string>>): number {
  const configured = configuration[TABLE_PROPERTIES.deletedFileRetentionDuration];
  if (!configured) return DEFAULT_FILE_RETENTION_MS;
  return intervalMsOf(configured) ?? DEFAULT_LOG_RETENTION_MS;
}
/** Default `delta.logRetentionDuration`: 30 days. */
export const DEFAULT_LOG_RETENTION_MS = 30 * UNIT_MS.day;
/** Default checkpoint interval (Spark's). */
export const DEFAULT_CHECKPOINT_INTERVAL = 10;

/**
 * The table's `delta.checkpointInterval`, or the default when it is absent or not a positive
 * integer (another writer may have set anything; `Number('ten')` would be NaN, and no version
 * is a multiple of NaN: no checkpoint would ever be written and every load would replay the
 * whole log).
 */
export function checkpointIntervalOf(configuration: Readonly<Record<string, string>>): number {
  const v = configuration[TABLE_PROPERTIES.checkpointInterval];
  return v !== undefined && /^[1-9]\d{0,8}$/.test(v.trim()) ? Number(v.trim()) : DEFAULT_CHECKPOINT_INTERVAL;
}
