import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * Parses Delta log JSON without losing precision: integers beyond 2^53 become `bigint`, every
 * other number a JS number (JSON.parse would silently round longs, DELTA.md §9.1).
 */
export function parseJsonLossless(text: string): unknown {
  return parse(text, null, (value: string) => {
    if (isInteger(value)) return isSafeNumber(value) ? Number(value) : BigInt(value);
    return Number(value);
  });
}

/** JSON text for log actions; `bigint` values are written as exact integer digits. */
export function stringifyJson(value: unknown): string {
  const out = stringify(value);
  if (out === undefined) throw new Error('value is not JSON-serialisable');
  return out;
}
