import { CONTRACTS, HEADERS, createRegistryClient, decodeEvent, encodeConfluent, registerContract } from '@sluice/contracts';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, createTopics, order, randomName, readTopic, testBrokers, startIngest } from './support';

// Confluent-framed Avro bodies (a producer using a Confluent serializer over HTTP), resolved
// through a real Confluent-compatible registry (Apicurio from tools/services.d/20-registry.sh).
// Bug: ingest had no registry, so every such event was rejected as AVRO_WRITER_UNKNOWN.
const brokers = testBrokers();
const registryUrl = process.env.SLUICE_TEST_REGISTRY_URL;
if (!registryUrl) throw new Error('SLUICE_TEST_REGISTRY_URL is not set: start tools/services.d/20-registry.sh and export SLUICE_TEST_REGISTRY_URL=http://127.0.0.1:18081 (tools/test-all.sh does both)');

const avro = { authorization: `Bearer ${KEYS.all.key}`, 'content-type': 'application/vnd.apache.avro' };

const start = (extra: Record<string, string>, rawTopic: string) => startIngest(brokers, rawTopic, extra);

async function post(url: string, body: Buffer) {
  const res = await fetch(`${url}/v1/events`, { method: 'POST', headers: avro, body });
  return { status: res.status, body: JSON.parse(await res.text()), retryAfter: res.headers.get('retry-after') };
}

describe('ingest with a schema registry', () => {
  let running: IngestRuntime | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('accepts a Confluent-framed event whose id the registry knows, and rejects an id it does not', async () => {
    const rawTopic = randomName('raw');
    await createTopics(brokers, [rawTopic]);
    const ids = await registerContract(createRegistryClient({ url: registryUrl as string, fetch: globalThis.fetch }), CONTRACTS.orders, `${randomName('ingest-registry')}-value`);
    const event = decodeEvent(JSON.stringify(order()), { now: Date.now() });
    if (!event.ok) throw new Error('sample order invalid');
    const schema = CONTRACTS.orders.latest.schema;
    const good = encodeConfluent(ids.get(CONTRACTS.orders.latest.version) as number, schema, event.event);

    const { ingest, url } = await start({ SCHEMA_REGISTRY_URL: registryUrl as string }, rawTopic);
    running = ingest;
    const accepted = await post(url, good);
    expect({ status: accepted.status, accepted: accepted.body.accepted }).toEqual({ status: 200, accepted: 1 });
    const unknown = await post(url, encodeConfluent(2_000_000_001, schema, event.event));
    expect({ status: unknown.status, code: unknown.body.errors?.[0]?.code }).toEqual({ status: 422, code: 'AVRO_WRITER_UNKNOWN' });

    // The bytes go to Kafka as sent, keyed by the entity, named by the contract header (a schema
    // id means something only to the registry).
    const records = await readTopic(brokers, rawTopic, 1);
    expect(records).toHaveLength(1); // the refused one was not produced
    const [record] = records;
    expect(record.value).toEqual(good);
    expect(record.key?.toString()).toBe(String((event.event as { order_id: string }).order_id));
    expect(record.headers[HEADERS.contract]?.toString()).toBe('orders');
  });

  it('answers 503 with Retry-After while the registry cannot be reached', async () => {
    const rawTopic = randomName('raw');
    await createTopics(brokers, [rawTopic]);
    // Nothing listens on port 9 of loopback.
    const { ingest, url } = await start({ SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9' }, rawTopic);
    running = ingest;
    const event = decodeEvent(JSON.stringify(order()), { now: Date.now() });
    if (!event.ok) throw new Error('sample order invalid');
    const res = await post(url, encodeConfluent(77, CONTRACTS.orders.latest.schema, event.event));
    expect({ status: res.status, code: res.body.error?.code, retryable: res.body.error?.retryable }).toEqual({ status: 503, code: 'INGEST_REGISTRY_UNAVAILABLE', retryable: true });
    // The registry's code, never its text (which may quote whatever answered in its place).
    expect(res.body.error.details).toEqual({ registry: 'REGISTRY_UNAVAILABLE' });
    expect(Number(res.retryAfter)).toBeGreaterThan(0);
  });
});
