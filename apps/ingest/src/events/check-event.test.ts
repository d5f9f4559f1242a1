import { loadConfig } from '@sluice/config';
import { CONTRACTS, encodeConfluent, encodeSingleObject, sampleOrderJson } from '@sluice/contracts';
import { ApiKeyStore, type ApiKeyEntry } from '../auth/api-keys';
import { ingestConfigSchema } from '../config';
import { MAX_ISSUES_PER_ANSWER, checkEvent, repeatsContract, withinIssueBudget, type EventLimits, type RejectedEvent } from './check-event';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const MINUTE = 60_000;
const DAY = 86_400_000;
const principal = { producer: 'shop', mayUse: () => true, maySendAs: () => true };
const slice = (eventTimeOffsetMs: number) => ({
  index: 0,
  depth: 0,
  bytes: Buffer.from(JSON.stringify(sampleOrderJson(1, NOW, { contract: 'orders', event_time: new Date(NOW + eventTimeOffsetMs).toISOString() }))),
});

/** The limits ingest builds from its configuration (runtime.ts passes these fields). */
function limitsFrom(env: Record<string, string>): EventLimits {
  const config = loadConfig(ingestConfigSchema, { KAFKA_BROKERS: '127.0.0.1:1', INGEST_API_KEYS: JSON.stringify([{ producer: 'shop', key: 'k'.repeat(24), contracts: ['*'] }]), ...env });
  return { maxEventBytes: config.maxEventBytes, maxDepth: config.maxDepth, maxFutureSkewMs: config.maxFutureSkewMs, maxEventAgeMs: config.maxEventAgeMs };
}

const codeOf = (r: ReturnType<typeof checkEvent>) => (r.ok ? 'accepted' : r.rejected.code);

describe('checkEvent timestamp limits', () => {
  it('uses the contracts defaults when EVENT_MAX_* are unset (5 minutes ahead, 7 days old)', () => {
    const limits = limitsFrom({});
    expect(codeOf(checkEvent(slice(2 * MINUTE), principal, undefined, limits, NOW))).toBe('accepted');
    expect(codeOf(checkEvent(slice(10 * MINUTE), principal, undefined, limits, NOW))).toBe('RULE_TIMESTAMP_FUTURE');
    expect(codeOf(checkEvent(slice(-6 * DAY), principal, undefined, limits, NOW))).toBe('accepted');
    expect(codeOf(checkEvent(slice(-8 * DAY), principal, undefined, limits, NOW))).toBe('RULE_TIMESTAMP_EXPIRED');
  });

  it('applies EVENT_MAX_FUTURE_SKEW_MS and EVENT_MAX_AGE_MS from the configuration', () => {
    const limits = limitsFrom({ EVENT_MAX_FUTURE_SKEW_MS: String(MINUTE), EVENT_MAX_AGE_MS: String(DAY) });
    expect(codeOf(checkEvent(slice(2 * MINUTE), principal, undefined, limits, NOW))).toBe('RULE_TIMESTAMP_FUTURE');
    expect(codeOf(checkEvent(slice(-2 * DAY), principal, undefined, limits, NOW))).toBe('RULE_TIMESTAMP_EXPIRED');
    expect(codeOf(checkEvent(slice(-DAY / 2), principal, undefined, limits, NOW))).toBe('accepted');
  });

  it('refuses an age limit under a minute', () => {
    expect(() => limitsFrom({ EVENT_MAX_AGE_MS: '1000' })).toThrow(/EVENT_MAX_AGE_MS/);
  });
});

describe('checkEvent producer names', () => {
  const limits = limitsFrom({});
  const principalOf = (entry: Omit<ApiKeyEntry, 'key'>) => {
    const r = new ApiKeyStore([{ ...entry, key: 'k'.repeat(24) }]).authenticate(`Bearer ${'k'.repeat(24)}`);
    if (!r.ok) throw new Error(r.reason);
    return r.principal;
  };
  const json = (producer: unknown) => ({ index: 3, depth: 0, bytes: Buffer.from(JSON.stringify(sampleOrderJson(1, NOW, { contract: 'orders', producer }))) });

  it("accepts an event naming the key's producer, by default the only name it may send as", () => {
    const shop = principalOf({ producer: 'shop-backend', contracts: ['*'] });
    expect(codeOf(checkEvent(json('shop-backend'), shop, undefined, limits, NOW))).toBe('accepted');
    const other = checkEvent(json('billing'), shop, undefined, limits, NOW);
    expect(other.ok).toBe(false);
    expect(!other.ok && other.rejected).toMatchObject({ index: 3, code: 'PRODUCER_MISMATCH', message: 'the event\'s producer "billing" is not one the API key may send as; it sends as "shop-backend"' });
  });

  it('takes the names a key lists, or any name with "*"', () => {
    const relay = principalOf({ producer: 'gateway', contracts: ['*'], envelopeProducers: ['shop-backend', 'wms'] });
    expect(codeOf(checkEvent(json('shop-backend'), relay, undefined, limits, NOW))).toBe('accepted');
    expect(codeOf(checkEvent(json('gateway'), relay, undefined, limits, NOW))).toBe('PRODUCER_MISMATCH');
    expect(codeOf(checkEvent(json('web'), relay, undefined, limits, NOW))).toBe('PRODUCER_MISMATCH');
    const any = principalOf({ producer: 'gateway', contracts: ['*'], envelopeProducers: ['*'] });
    expect(codeOf(checkEvent(json('anything at all'), any, undefined, limits, NOW))).toBe('accepted');
  });

  it('checks Avro events too, and quotes a hostile name as a JSON string', () => {
    const shop = principalOf({ producer: 'shop-backend', contracts: ['*'] });
    const schema = CONTRACTS.orders.latest.schema;
    const event = { ...sampleOrderJson(1, NOW), event_time: NOW, producer: `"<${'x'.repeat(120)}` };
    delete (event as Record<string, unknown>).contract;
    const r = checkEvent({ index: 0, depth: 0, bytes: encodeSingleObject(schema, event) }, shop, undefined, limits, NOW, true);
    expect(!r.ok && r.rejected.code).toBe('PRODUCER_MISMATCH');
    expect(!r.ok && r.rejected.message.length).toBeLessThan(250);
    expect(!r.ok && r.rejected.message).toContain('"\\"<xxx');
    // A control character is no name at all: the contract refuses it before the key is asked.
    const newline = { ...event, producer: 'shop\nbackend' };
    const n = checkEvent({ index: 0, depth: 0, bytes: encodeSingleObject(schema, newline) }, shop, undefined, limits, NOW, true);
    expect(!n.ok && n.rejected.code).toBe('RULE_PATTERN');
  });

  it('reports a schema problem before the producer name', () => {
    const shop = principalOf({ producer: 'shop-backend', contracts: ['*'] });
    const bad = { index: 0, depth: 0, bytes: Buffer.from(JSON.stringify(sampleOrderJson(1, NOW, { contract: 'orders', producer: 'billing', version: 'x' }))) };
    expect(codeOf(checkEvent(bad, shop, undefined, limits, NOW))).toBe('EVENT_SCHEMA_MISMATCH');
  });
});

describe('repeatsContract', () => {
  const schema = CONTRACTS.orders.latest.schema;
  const event = { ...sampleOrderJson(1, NOW), event_time: NOW };
  delete (event as Record<string, unknown>).contract;

  it('repeats the contract only where the bytes alone do not name it', () => {
    const json = slice(0).bytes;
    expect(repeatsContract(json, undefined, false)).toBe(false);
    expect(repeatsContract(json, 'orders', false)).toBe(true);
    expect(repeatsContract(encodeSingleObject(schema, event), undefined, true)).toBe(false);
    expect(repeatsContract(encodeConfluent(7, schema, event), undefined, true)).toBe(true);
  });
});

// Up to 20 issues per rejected event made an answer 20–80 times its request, held outside the
// in-flight budget while the client did not read it.
describe('the issues of one answer', () => {
  const issue = { code: 'EVENT_SCHEMA_MISMATCH', path: '/x', message: 'missing' } as never;
  const rejected = (n: number, issues: number): RejectedEvent[] =>
    Array.from({ length: n }, (_, index) => ({ index, code: 'EVENT_SCHEMA_MISMATCH', message: 'm', issues: Array.from({ length: issues }, () => issue) }));

  it('stop after MAX_ISSUES_PER_ANSWER in all, while every event keeps its index, code and message', () => {
    const out = withinIssueBudget(rejected(10_000, 7));
    expect(out).toHaveLength(10_000);
    expect(out.every((r, i) => r.index === i && r.code === 'EVENT_SCHEMA_MISMATCH' && r.message === 'm')).toBe(true);
    const reported = out.reduce((n, r) => n + (r.issues?.length ?? 0), 0);
    expect(reported).toBeLessThanOrEqual(MAX_ISSUES_PER_ANSWER);
    expect(reported).toBeGreaterThan(MAX_ISSUES_PER_ANSWER - 7);
    expect(out[9_999].issues).toBeUndefined();
  });

  it('leave a small answer as it is', () => {
    const few = rejected(3, 5);
    expect(withinIssueBudget(few)).toEqual(few);
  });
});


// A request header naming no contract, on an event that failed before the name was looked up (not
// JSON), was refused CONTRACT_FORBIDDEN with the whole header in the message: 15 KB of header and
// 10,000 such lines made a 150 MB answer, and three at once ran ingest out of heap.
describe('checkEvent scope for a contract that does not exist', () => {
  const limits = limitsFrom({});
  const scoped = { producer: 'shop', mayUse: (c: string) => c === 'orders', maySendAs: () => true };
  const notJson = { index: 0, depth: 0, bytes: Buffer.from('x') };

  it("answers the event's own reason, not CONTRACT_FORBIDDEN, and keeps the message short", () => {
    const header = 'c'.repeat(15_500);
    const r = checkEvent(notJson, scoped, header, limits, NOW);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.rejected.code).toBe('EVENT_NOT_JSON');
    expect(!r.ok && JSON.stringify(r.rejected).length).toBeLessThan(1_000);
    const unknown = checkEvent(json(), scoped, 'zz', limits, NOW);
    expect(codeOf(unknown)).toBe('CONTRACT_UNKNOWN');
  });

  it('still refuses a known contract the key may not send, whatever else is wrong with the event', () => {
    expect(codeOf(checkEvent(notJson, scoped, 'inventory', limits, NOW))).toBe('CONTRACT_FORBIDDEN');
    expect(codeOf(checkEvent(notJson, scoped, 'orders', limits, NOW))).toBe('EVENT_NOT_JSON');
  });

  function json() {
    return { index: 0, depth: 0, bytes: Buffer.from(JSON.stringify(sampleOrderJson(1, NOW, {}))) };
  }
});
