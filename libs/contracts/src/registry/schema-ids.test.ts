import { AvroDecoder, encodeConfluent } from '../avro/codec';
import { CONTRACTS, ORDERS_V2 } from '../contracts';
import { sampleOrderJson } from '../samples';
import { decodeEvent } from '../decode';
import { createRegistryClient, type FetchLike } from './client';
import { MAX_REMEMBERED_MISSES, SchemaIdLearner } from './schema-ids';

// The learner's own logic with a scripted registry; test/registry.int.test.ts and the validate
// and ingest integration tests use a real one.
function registry(answers: Record<number, { status: number; body: unknown }>) {
  const asked: number[] = [];
  const fetch: FetchLike = async (url) => {
    const id = Number(/schemas\/ids\/(\d+)/.exec(url)?.[1]);
    asked.push(id);
    const a = answers[id] ?? { status: 404, body: { error_code: 40403, message: 'Schema not found' } };
    return { status: a.status, text: async () => JSON.stringify(a.body) };
  };
  return { client: createRegistryClient({ url: 'http://r', fetch, retries: 0, sleep: async () => undefined }), asked };
}

const now = Date.UTC(2026, 10, 29, 12);
const event = decodeEvent(JSON.stringify(sampleOrderJson(1, now)), { contract: 'orders', now });
if (!event.ok) throw new Error('sample invalid');
const confluent = (id: number): Buffer => encodeConfluent(id, ORDERS_V2, event.event);

describe('SchemaIdLearner', () => {
  it('teaches the decoder a Confluent id from the registry, once', async () => {
    const { client, asked } = registry({ 42: { status: 200, body: { schema: JSON.stringify(ORDERS_V2) } } });
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const learner = new SchemaIdLearner(decoder, client);
    const bytes = confluent(42);
    expect(decodeEvent(bytes, { avro: decoder, now })).toMatchObject({ ok: false, issues: [{ code: 'AVRO_WRITER_UNKNOWN' }] });
    await learner.prepare([bytes, null, Buffer.from('{"json":1}'), bytes]);
    await learner.prepare([bytes]);
    expect(asked).toEqual([42]);
    expect(decodeEvent(bytes, { avro: decoder, now })).toMatchObject({ ok: true, name: 'orders', event: { order_id: 'order-1' } });
  });

  it('leaves an id the registry does not have unknown, and does not ask again within the TTL', async () => {
    const { client, asked } = registry({});
    let clock = now;
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const learner = new SchemaIdLearner(decoder, client, { missTtlMs: 1000, now: () => clock });
    await learner.prepare([confluent(9)]);
    await learner.prepare([confluent(9)]);
    expect(asked).toEqual([9]);
    expect(decodeEvent(confluent(9), { avro: decoder, now })).toMatchObject({ ok: false, issues: [{ code: 'AVRO_WRITER_UNKNOWN' }] });
    clock += 1001;
    await learner.prepare([confluent(9)]);
    expect(asked).toEqual([9, 9]);
  });

  it('leaves unknown a schema that belongs to no contract', async () => {
    const { client } = registry({ 5: { status: 200, body: { schema: JSON.stringify({ type: 'record', name: 'x.Other', fields: [] }) } } });
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    await new SchemaIdLearner(decoder, client).prepare([confluent(5)]);
    expect(decoder.knowsSchemaId(5)).toBe(false);
  });

  it('throws when the registry is unreachable or refuses, so the caller retries instead of judging the events', async () => {
    const down = registry({ 7: { status: 503, body: { error_code: 50301, message: 'down' } } });
    await expect(new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), down.client).prepare([confluent(7)])).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE', retryable: true });
    const refused = registry({ 7: { status: 401, body: { message: 'no' } } });
    await expect(new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), refused.client).prepare([confluent(7)])).rejects.toMatchObject({ code: 'REGISTRY_UNAUTHORIZED' });
  });

  it('stops looking up after maxMisses unknown ids in one call; later calls look up the rest', async () => {
    const { client, asked } = registry({});
    const learner = new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), client, { maxMisses: 3 });
    const batch = Array.from({ length: 50 }, (_, i) => confluent(1000 + i));
    await learner.prepare(batch);
    // Lookups run eight at a time; the cap is checked between rounds.
    expect(asked).toEqual(Array.from({ length: 8 }, (_, i) => 1000 + i));
    await learner.prepare(batch);
    expect(asked.slice(8)).toEqual(Array.from({ length: 8 }, (_, i) => 1008 + i));
  });

  it('never counts ids the registry has against the cap, so a batch of many new versions is read whole', async () => {
    const answers = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [100 + i, { status: 200, body: { schema: JSON.stringify(ORDERS_V2) } }]));
    const { client, asked } = registry(answers);
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const ids = [...Array.from({ length: 5 }, (_, i) => 1000 + i), ...Array.from({ length: 30 }, (_, i) => 100 + i)];
    await new SchemaIdLearner(decoder, client, { maxMisses: 8 }).prepare(ids.map(confluent));
    expect(asked).toHaveLength(35);
    expect(ids.filter((id) => decoder.knowsSchemaId(id))).toEqual(ids.slice(5));
  });

  it('with maxMisses Infinity judges no id it did not ask the registry about', async () => {
    const { client, asked } = registry({ 4999: { status: 200, body: { schema: JSON.stringify(ORDERS_V2) } } });
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    await new SchemaIdLearner(decoder, client, { maxMisses: Infinity }).prepare(Array.from({ length: 5000 }, (_, i) => confluent(i)));
    expect(new Set(asked).size).toBe(5000);
    expect(decodeEvent(confluent(4999), { avro: decoder, now })).toMatchObject({ ok: true, name: 'orders' });
  });

  it('past its budget throws a retryable timeout between rounds; the next call goes on where it stopped', async () => {
    let clock = now;
    const asked: number[] = [];
    const fetch: FetchLike = async (url) => {
      asked.push(Number(/schemas\/ids\/(\d+)/.exec(url)?.[1]));
      clock += 1000; // a slow registry: each answer takes a second
      return { status: 404, text: async () => JSON.stringify({ error_code: 40403, message: 'Schema not found' }) };
    };
    const client = createRegistryClient({ url: 'http://r', fetch, retries: 0, sleep: async () => undefined });
    const learner = new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), client, { maxMisses: Infinity, budgetMs: 5000, now: () => clock });
    const batch = Array.from({ length: 20 }, (_, i) => confluent(100 + i));
    await expect(learner.prepare(batch)).rejects.toMatchObject({ code: 'REGISTRY_TIMEOUT', retryable: true });
    expect(asked).toHaveLength(8); // one round of eight took 8 s, past the 5 s budget
    await expect(learner.prepare(batch)).rejects.toMatchObject({ code: 'REGISTRY_TIMEOUT' });
    await learner.prepare(batch);
    // Each id was asked once: the misses of every round were remembered (each from its own answer).
    expect(asked.sort()).toEqual(Array.from({ length: 20 }, (_, i) => 100 + i));
  });

  it('finishes a batch whose lookups outlast the miss TTL: misses of unfinished tries are not asked again, and their TTL starts when the batch is done', async () => {
    let clock = now;
    const asked: number[] = [];
    const fetch: FetchLike = async (url) => {
      asked.push(Number(/schemas\/ids\/(\d+)/.exec(url)?.[1]));
      clock += 1000; // a slow registry: each answer takes a second
      return { status: 404, text: async () => JSON.stringify({ error_code: 40403, message: 'Schema not found' }) };
    };
    const client = createRegistryClient({ url: 'http://r', fetch, retries: 0, sleep: async () => undefined });
    const learner = new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), client, { maxMisses: Infinity, budgetMs: 15_000, missTtlMs: 60_000, now: () => clock });
    // 200 ids take 200 s of lookups in all, over three times the TTL; each try gets 15 s.
    const batch = Array.from({ length: 200 }, (_, i) => confluent(500 + i));
    let tries = 1;
    for (; tries <= 50; tries++) {
      const done = await learner.prepare(batch).then(
        () => true,
        (err: { code?: string }) => {
          if (err.code !== 'REGISTRY_TIMEOUT') throw err;
          return false;
        },
      );
      if (done) break;
    }
    expect(tries).toBeLessThanOrEqual(50);
    expect(asked).toHaveLength(200);
    expect(new Set(asked).size).toBe(200);
    // Remembered from the end of the batch: not asked within the TTL, asked again after it.
    clock += 59_000;
    await learner.prepare(batch.slice(0, 1));
    expect(asked).toHaveLength(200);
    clock += 2_000;
    await learner.prepare(batch.slice(0, 1));
    expect(asked).toHaveLength(201);
  });

  it('remembers every miss of a round before throwing a failure of the same round', async () => {
    const { client, asked } = registry({ 2: { status: 503, body: { error_code: 50301, message: 'down' } } });
    const learner = new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), client, { maxMisses: Infinity });
    await expect(learner.prepare([1, 2, 3].map(confluent))).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    await expect(learner.prepare([1, 2, 3].map(confluent))).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    expect(asked).toEqual([1, 2, 3, 2]);
  });

  it('remembers a bounded number of unknown ids, forgetting the oldest first', async () => {
    const { client, asked } = registry({});
    const learner = new SchemaIdLearner(new AvroDecoder(Object.values(CONTRACTS)), client, { maxMisses: Infinity });
    for (let from = 0; from <= MAX_REMEMBERED_MISSES; from += 1000) {
      await learner.prepare(Array.from({ length: Math.min(1000, MAX_REMEMBERED_MISSES + 1 - from) }, (_, i) => confluent(from + i)));
    }
    expect(asked).toHaveLength(MAX_REMEMBERED_MISSES + 1);
    await learner.prepare([confluent(MAX_REMEMBERED_MISSES), confluent(0)]);
    // The newest is still remembered; the oldest was forgotten and is asked again.
    expect(asked.slice(MAX_REMEMBERED_MISSES + 1)).toEqual([0]);
  });
});
