import type { AvroValue } from '../avro/schema';
import { defineContract } from '../define';
import { eventSchema } from '../envelope';
import { ENVELOPE_RULES, OPTIONAL_TEXT_DESCRIPTION, OPTIONAL_TEXT_PATTERN, idRule, keyRule } from './common-rules';

/** Kinds of clickstream events. */
export const CLICK_EVENT_TYPES = ['page_view', 'click', 'add_to_cart', 'search', 'checkout'] as const;

const payloadV1 = {
  type: 'record',
  name: 'sluice.clickstream.ClickPayload',
  fields: [
    { name: 'session_id', type: 'string' },
    { name: 'event_type', type: { type: 'enum', name: 'sluice.clickstream.ClickEventType', symbols: CLICK_EVENT_TYPES } },
    { name: 'page', type: 'string', doc: 'Path of the page, starting with /.' },
    { name: 'referrer', type: ['null', 'string'], default: null },
    { name: 'duration_ms', type: ['null', 'long'], default: null, doc: 'Time on page, ms, when known.' },
  ],
} as const;

/** Clickstream schema version 1. */
export const CLICKSTREAM_V1 = eventSchema(
  'sluice.clickstream.ClickEvent',
  [{ name: 'user_id', type: 'string' }],
  payloadV1,
  'One user interaction on the web shop.',
);

/** A clickstream event of the latest schema version. */
export type ClickEvent = AvroValue<typeof CLICKSTREAM_V1>;

/** The clickstream contract: append-only user events, partitioned by user, per-minute gold counts. */
export const clickstream = defineContract<ClickEvent>({
  name: 'clickstream',
  doc: 'Append-only user events with session and page; per-minute per-user aggregates in gold.',
  kind: 'append',
  versions: [{ version: 1, schema: CLICKSTREAM_V1 }],
  keyFields: ['user_id'],
  compatibility: 'FULL_TRANSITIVE',
  rules: [
    ...ENVELOPE_RULES,
    keyRule('user_id'),
    idRule('payload.session_id'),
    { path: 'payload.page', minLength: 1, maxLength: 2048, pattern: /^\//, patternDescription: 'a path starting with /' },
    { path: 'payload.referrer', maxLength: 2048, pattern: OPTIONAL_TEXT_PATTERN, patternDescription: OPTIONAL_TEXT_DESCRIPTION },
    { path: 'payload.duration_ms', min: 0, max: 86_400_000 },
  ],
  aggregates: [
    {
      name: 'user_minute',
      windowMs: 60_000,
      groupBy: ['user_id'],
      measures: [{ name: 'events', fn: 'count' }],
    },
  ],
});
