import { lakeError } from '../errors';

const UNIT_MS: Record<string, number> = {
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 604_800_000,
};

/** Parses a Delta duration property (`interval 7 days`) into ms; throws on any other form. */
export function parseInterval(text: string, property: string): number {
  const m = /^interval\s+(\d+)\s+(millisecond|second|minute|hour|day|week)s?$/i.exec(text.trim());
  if (!m) throw lakeError('LAKE_SCHEMA_INVALID', `${property} must look like 'interval <n> <unit>' (e.g. 'interval 7 days'), got ${JSON.stringify(text)}`);
  return Number(m[1]) * UNIT_MS[m[2].toLowerCase()];
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

/**
 * Validates table properties: the `delta.*` keys this library honours (others, such as
 * `delta.enableDeletionVectors` or column mapping, would need protocol features it refuses);
 * keys outside `delta.` are free-form.
 */
export function validateProperties(properties: Readonly<Record<string, string>>): void {
  for (const [k, v] of Object.entries(properties)) {
    if (typeof v !== 'string') throw lakeError('LAKE_SCHEMA_INVALID', `table property ${k} must be a string`);
    if (!k.startsWith('delta.')) continue;
    const check = ALLOWED_DELTA_PROPERTIES[k];
    if (!check) throw lakeError('LAKE_UNSUPPORTED_PROTOCOL', `table property ${k} is not supported (it needs protocol features this library does not write)`);
    check(v, k);
  }
}

/** Default `delta.deletedFileRetentionDuration`: one week. */
export const DEFAULT_FILE_RETENTION_MS = 7 * UNIT_MS.day;
/** Default `delta.logRetentionDuration`: 30 days. */
export const DEFAULT_LOG_RETENTION_MS = 30 * UNIT_MS.day;
/** Default checkpoint interval (Spark's). */
export const DEFAULT_CHECKPOINT_INTERVAL = 10;
