import type { FieldRule } from '../contract';

/** Printable ASCII without spaces or the key separator: safe in Kafka keys, paths and URLs. */
export const ID_PATTERN = /^[A-Za-z0-9._:@-]+$/;

/**
 * Free text a person or system wrote: not blank, and no control, invisible format (bidi
 * overrides, zero-width) or line-separator characters, which would hide or reorder what
 * dashboards and logs show (a producer "a\u0000b" or "\u202e…" passed before).
 */
export const TEXT_PATTERN = /^(?!\s*$)[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

/** How {@link TEXT_PATTERN} reads in a RULE_PATTERN message. */
export const TEXT_DESCRIPTION = 'printable text (not blank; no control, invisible or line-separator characters)';

/** {@link TEXT_PATTERN} where an empty string means something (a visit with no referrer). */
export const OPTIONAL_TEXT_PATTERN = /^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$/u;

/** How {@link OPTIONAL_TEXT_PATTERN} reads in a RULE_PATTERN message. */
export const OPTIONAL_TEXT_DESCRIPTION = 'printable text (no control, invisible or line-separator characters)';

/** Rules every contract applies to the envelope. */
export const ENVELOPE_RULES: readonly FieldRule[] = [
  { path: 'event_id', minLength: 1, maxLength: 128, pattern: ID_PATTERN, patternDescription: 'letters, digits and ._:@-' },
  { path: 'producer', minLength: 1, maxLength: 128, pattern: TEXT_PATTERN, patternDescription: TEXT_DESCRIPTION },
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
