import type { FieldRule } from '../contract';

/** Printable ASCII without spaces or the key separator: safe in Kafka keys, paths and URLs. */
export const ID_PATTERN = /^[A-Za-z0-9._:@-]+$/;

/** Rules every contract applies to the envelope. */
export const ENVELOPE_RULES: readonly FieldRule[] = [
  { path: 'event_id', minLength: 1, maxLength: 128, pattern: ID_PATTERN, patternDescription: 'letters, digits and ._:@-' },
  { path: 'producer', minLength: 1, maxLength: 128 },
  { path: 'schema_version', min: 1 },
  { path: 'version', min: 0 },
];

/** Rules for an identifier field that is not part of the entity key. */
export function idRule(path: string): FieldRule {
  return { path, minLength: 1, maxLength: 128, pattern: ID_PATTERN, patternDescription: 'letters, digits and ._:@-' };
}

// An empty entity key is reported once, as RULE_KEY_MISSING, so the key rule allows "" here.
const KEY_PATTERN = /^[A-Za-z0-9._:@-]*$/;

/** Rules for one entity-key field (emptiness is checked separately as RULE_KEY_MISSING). */
export function keyRule(path: string): FieldRule {
  return { path, maxLength: 128, pattern: KEY_PATTERN, patternDescription: 'letters, digits and ._:@-' };
}
