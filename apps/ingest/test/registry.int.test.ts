import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CONTRACTS, HEADERS, createRegistryClient, decodeEvent, encodeConfluent, registerContract } from '@sluice/contracts';
import { type IngestRuntime } from '../src/runtime';
import { KEYS, createTopics, order, randomName, readTopic, testBrokers, startIngest } from './support';
import { testRegistryUrl } from '@sluice/testing';

// Confluent-framed Avro bodies (a producer using a Confluent serializer over HTTP), resolved
// through a real Confluent-compatible registry (Apicurio from tools/services.d/20-registry.sh).
// Bug: ingest had no registry, so every such event was rejected as AVRO_WRITER_UNKNOWN.
const brokers = testBrokers();
const registryUrl = testRegistryUrl();

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
    const ids = await registerContract(createRegistryClient({ url: registryUrl, fetch: globalThis.fetch }), CONTRACTS.orders, `${randomName('ingest-registry')}-value`);
    const event = decodeEvent(JSON.stringify(order()), { now: Date.now() });
    if (!event.ok) throw new Error('sample order invalid');
    const schema = CONTRACTS.orders.latest.schema;
    const good = encodeConfluent(ids.get(CONTRACTS.orders.latest.version) as number, schema, event.event);

    const { ingest, url } = await start({ SCHEMA_REGISTRY_URL: registryUrl }, rawTopic);
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

  // A registry behind basic auth (Confluent Cloud's API key and secret): here the real registry
  // behind a proxy that refuses any other Authorization header with the registry's 401 answer.
  it('sends SCHEMA_REGISTRY_USERNAME / _PASSWORD as basic auth; a refused one is 503 naming REGISTRY_UNAUTHORIZED', async () => {
    const expected = `Basic ${Buffer.from('registry-key:registry-secret').toString('base64')}`;
    const proxy = http.createServer((req, res) => {
      if (req.headers.authorization !== expected) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
        return;
      }
      fetch(`${registryUrl}${req.url}`, { headers: { accept: String(req.headers.accept ?? '*/*') } })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch((err: Error) => res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ message: err.message })));
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const rawTopic = randomName('raw');
      await createTopics(brokers, [rawTopic]);
      const ids = await registerContract(createRegistryClient({ url: registryUrl, fetch: globalThis.fetch }), CONTRACTS.orders, `${randomName('ingest-registry-auth')}-value`);
      const event = decodeEvent(JSON.stringify(order()), { now: Date.now() });
      if (!event.ok) throw new Error('sample order invalid');
      const body = encodeConfluent(ids.get(CONTRACTS.orders.latest.version) as number, CONTRACTS.orders.latest.schema, event.event);

      const refused = await start({ SCHEMA_REGISTRY_URL: proxyUrl, SCHEMA_REGISTRY_USERNAME: 'registry-key', SCHEMA_REGISTRY_PASSWORD: 'wrong' }, rawTopic);
      running = refused.ingest;
      const denied = await post(refused.url, body);
      expect({ status: denied.status, code: denied.body.error?.code, details: denied.body.error?.details }).toEqual({
        status: 503,
        code: 'INGEST_REGISTRY_UNAVAILABLE',
        details: { registry: 'REGISTRY_UNAUTHORIZED' },
      });
      await refused.ingest.close();

      const allowed = await start({ SCHEMA_REGISTRY_URL: proxyUrl, SCHEMA_REGISTRY_USERNAME: 'registry-key', SCHEMA_REGISTRY_PASSWORD: 'registry-secret' }, rawTopic);
      running = allowed.ingest;
      const accepted = await post(allowed.url, body);
      expect({ status: accepted.status, accepted: accepted.body.accepted }).toEqual({ status: 200, accepted: 1 });
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('refuses to start with a registry password but no username', async () => {
    await expect(start({ SCHEMA_REGISTRY_URL: registryUrl, SCHEMA_REGISTRY_PASSWORD: 'secret' }, randomName('raw'))).rejects.toThrow(
      'SCHEMA_REGISTRY_PASSWORD is set without SCHEMA_REGISTRY_USERNAME',
    );
  });
});
