import { AGGREGATE_FUNCTIONS, BUCKET_INTERVALS, OPERATORS } from './query-types';

/** Longest `in` list; longer lists are a sign of a client that should join elsewhere. */
export const MAX_IN_VALUES = 1000;
/** Nesting levels of and/or groups below the top-level (implicitly and-ed) list. */
export const MAX_FILTER_DEPTH = 3;
/** Most conditions at one level. */
export const MAX_CONDITIONS = 64;
/**
 * Most conditions in one query, however nested. The schema alone lets a 256 KiB body carry ~4,000
 * (64 per level, three levels), and file pruning checks each against every file's statistics on
 * the event loop, before any limit or timeout: seconds per request on a table of 10k files.
 */
export const MAX_LEAF_CONDITIONS = 256;

const NAME = { type: 'string', minLength: 1, maxLength: 128 } as const;
// Not `__proto__`: an answer row is a plain object, where that name sets the prototype instead
// of holding the value (the row came back as {}).
const ALIAS = { type: 'string', pattern: '^(?!__proto__$)[A-Za-z_][A-Za-z0-9_]{0,63}$' } as const;
const SCALAR = { anyOf: [{ type: 'string', maxLength: 1024 }, { type: 'number' }, { type: 'boolean' }] } as const;

const condition = {
  type: 'object',
  additionalProperties: false,
  required: ['column', 'op'],
  properties: {
    column: NAME,
    op: { type: 'string', enum: [...OPERATORS] },
    value: {
      anyOf: [SCALAR, { type: 'array', maxItems: MAX_IN_VALUES, minItems: 1, items: SCALAR }],
    },
  },
} as const;

/**
 * The filter schema, unrolled to a fixed depth rather than recursive: a deeply nested hostile
 * body fails at the first level past the limit instead of recursing through the validator. Inline
 * (no `$ref`) so the OpenAPI description generated from it stays self-contained.
 */
function filterSchema(depth: number): object {
  if (depth === 0) return condition;
  const list = { type: 'array', minItems: 1, maxItems: MAX_CONDITIONS, items: filterSchema(depth - 1) };
  return {
    anyOf: [
      condition,
      { type: 'object', additionalProperties: false, required: ['and'], properties: { and: list } },
      { type: 'object', additionalProperties: false, required: ['or'], properties: { or: list } },
    ],
  };
}

/** JSON Schema of the read-your-writes block (shared by the query body and GET query strings). */
export const waitForSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    version: { type: 'integer', minimum: 0 },
    offsets: {
      type: 'object',
      maxProperties: 1024,
      propertyNames: { maxLength: 256 },
      additionalProperties: { type: 'integer', minimum: -1 },
    },
    timeoutMs: { type: 'integer', minimum: 0, maximum: 60_000 },
  },
} as const;

/** JSON Schema of a time-travel selector. */
export const asOfSchema = {
  oneOf: [
    { type: 'object', additionalProperties: false, required: ['version'], properties: { version: { type: 'integer', minimum: 0 } } },
    { type: 'object', additionalProperties: false, required: ['timestamp'], properties: { timestamp: { type: 'string', format: 'date-time' } } },
  ],
} as const;

/** JSON Schema of the query body (fastify validates with ajv before any handler runs). */
export const queryBodySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    select: { type: 'array', maxItems: 256, items: NAME },
    where: { type: 'array', maxItems: MAX_CONDITIONS, items: filterSchema(MAX_FILTER_DEPTH) },
    groupBy: { type: 'array', maxItems: 16, items: NAME },
    aggregates: {
      type: 'array',
      maxItems: 32,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['fn', 'column'],
        properties: { fn: { type: 'string', enum: [...AGGREGATE_FUNCTIONS] }, column: NAME, as: ALIAS },
      },
    },
    timeBucket: {
      type: 'object',
      additionalProperties: false,
      required: ['column', 'interval'],
      properties: { column: NAME, interval: { type: 'string', enum: Object.keys(BUCKET_INTERVALS) }, as: ALIAS },
    },
    orderBy: {
      type: 'array',
      maxItems: 16,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['column'],
        properties: { column: NAME, dir: { type: 'string', enum: ['asc', 'desc'] } },
      },
    },
    limit: { type: 'integer', minimum: 0 },
    offset: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    asOf: asOfSchema,
    waitFor: waitForSchema,
  },
} as const;
