import * as http from 'node:http';
import * as net from 'node:net';
import { CONTRACTS, HEADERS, createRegistryClient, decodeEvent, encodeConfluent, registerContract } from '@sluice/contracts';
import { KafkaProducer } from '@sluice/kafka';
import { createTopics, order, randomName, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';
import { testRegistryUrl } from '@sluice/testing';

// Confluent-framed Avro on the raw topic (what a producer using a Confluent serializer writes
// directly to Kafka), resolved through a real Confluent-compatible registry (Apicurio from
// tools/services.d/20-registry.sh). Bug: validate did not read SCHEMA_REGISTRY_URL, so every
// such event went to the DLQ as AVRO_WRITER_UNKNOWN.
const brokers = testBrokers();
const registryUrl = testRegistryUrl();

async function confluentOrder(): Promise<{ event: Record<string, unknown>; bytes: Buffer; unknownId: (n: number) => Buffer }> {
  const client = createRegistryClient({ url: registryUrl, fetch: globalThis.fetch });
  const ids = await registerContract(client, CONTRACTS.orders, `${randomName('validate-registry')}-value`);
  const version = CONTRACTS.orders.latest;
  const json = order();
  const decoded = decodeEvent(JSON.stringify(json), { now: Date.now() });
  if (!decoded.ok) throw new Error(`sample order invalid: ${JSON.stringify(decoded.issues)}`);
  return {
    event: json,
    bytes: encodeConfluent(ids.get(version.version) as number, version.schema, decoded.event),
    unknownId: (n) => encodeConfluent(2_000_000_000 + n, version.schema, decoded.event),
  };
}

/**
 * A registry that goes away and comes back: a loopback listener that cuts every connection until
 * `forward()`, then passes connections to `target` (the real registry). It holds its port from the
 * start, so nothing else can take it between the outage and the return.
 */
async function flakyRegistry(target: URL): Promise<{ url: string; forward(): void; close(): Promise<void> }> {
  let forwarding = false;
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const server = net.createServer((client) => {
    track(client);
    if (!forwarding) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(Number(target.port), target.hostname);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    forward: () => (forwarding = true),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The registry behind basic auth (Confluent Cloud's API key and secret): any other credentials get its 401 answer. */
async function guardedRegistry(target: string, username: string, password: string): Promise<{ url: string; close(): Promise<void> }> {
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const server = http.createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
      return;
    }
    fetch(`${target}${req.url}`, { headers: { accept: String(req.headers.accept ?? '*/*') } })
      .then(async (answer) => res.writeHead(answer.status, { 'content-type': 'application/json' }).end(Buffer.from(await answer.arrayBuffer())))
      .catch((err: Error) => res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ message: err.message })));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

async function feed(topic: string, records: { key: string; value: Buffer }[]): Promise<void> {
  const producer = new KafkaProducer({ brokers, clientId: 'registry-feed' });
  await producer.connect();
  await producer.sendBatch(records.map((r) => ({ topic, ...r })));
  await producer.close();
}

describe('validate with a schema registry', () => {
  let validate: Child | undefined;
  afterEach(async () => {
    await stopService(validate, 'SIGKILL');
    validate = undefined;
  });

  it('reads Confluent-framed events through the registry, and dead-letters the ids the registry does not have', async () => {
    const t = topicsFor('registry');
    // One raw partition, so the unknown ids and the good event arrive in one batch.
    await createTopics(brokers, [t.raw], 1);
    await createTopics(brokers, [t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream]);
    const good = await confluentOrder();
    // More unknown ids ahead of the good one than the edge's lookup cap (16 misses). Bug: validate
    // capped its lookups at 16 ids per batch, so the good event's id was never asked for and the
    // event was dead-lettered as AVRO_WRITER_UNKNOWN.
    const unknown = Array.from({ length: 20 }, (_, n) => ({ key: `unknown-${n}`, value: good.unknownId(n) }));
    await feed(t.raw, [...unknown, { key: 'good', value: good.bytes }]);
    validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { SCHEMA_REGISTRY_URL: registryUrl }));

    const out = await readTopics(brokers, [t.valid.orders, t.dlq], unknown.length + 1, 60_000);
    expect(out.map((m) => `${m.topic}:${m.key?.toString()}`).sort()).toEqual([
      ...unknown.map((r) => `${t.dlq}:${r.key}`),
      `${t.valid.orders}:${String(good.event.order_id)}`,
    ].sort());
    const valid = out.find((m) => m.topic === t.valid.orders)!;
    const readBack = decodeEvent(valid.value as Buffer, { now: Date.now() });
    expect(readBack).toMatchObject({ ok: true, name: 'orders', event: { event_id: good.event.event_id, order_id: good.event.order_id } });
    for (const dead of out.filter((m) => m.topic === t.dlq)) {
      expect(dead.headers[HEADERS.dlqReason]?.toString()).toBe('AVRO_WRITER_UNKNOWN');
      expect(dead.value).toEqual(unknown.find((r) => r.key === dead.key?.toString())?.value);
    }
  });

  it('retries the batch while the registry cannot be reached instead of dead-lettering its events, and passes it once the registry is back', async () => {
    const t = topicsFor('registry-down');
    await createTopics(brokers, [t.raw, t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream]);
    const good = await confluentOrder();
    await feed(t.raw, [{ key: 'good', value: good.bytes }]);
    // Every registry connection is cut until the registry "comes back".
    const registry = await flakyRegistry(new URL(registryUrl));
    try {
      validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { SCHEMA_REGISTRY_URL: registry.url }));
      const warning = JSON.parse(await validate.waitFor(/batch aborted; retrying/));
      expect(warning.code).toBe('VALIDATE_REGISTRY_UNAVAILABLE');
      const retries = () => validate!.output.filter((line) => /batch aborted; retrying/.test(line)).length;
      for (const deadline = Date.now() + 30_000; retries() < 3 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 200));
      expect(retries()).toBeGreaterThanOrEqual(3);
      expect(await readTopics(brokers, [t.valid.orders, t.dlq], 0, 1000, 2000)).toEqual([]);

      // The registry is back: the same batch passes, its event valid, once.
      registry.forward();
      const out = await readTopics(brokers, [t.valid.orders, t.dlq], 1, 60_000, 2000);
      expect(out.map((m) => `${m.topic}:${m.key?.toString()}`)).toEqual([`${t.valid.orders}:${String(good.event.order_id)}`]);
      expect(decodeEvent(out[0].value as Buffer, { now: Date.now() })).toMatchObject({ ok: true, event: { event_id: good.event.event_id } });
    } finally {
      await registry.close();
    }
  });

  it('retries, never dead-letters, while the registry refuses its credentials, saying so; the right ones pass the batch', async () => {
    const t = topicsFor('registry-auth-refused');
    await createTopics(brokers, [t.raw, t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream]);
    const good = await confluentOrder();
    await feed(t.raw, [{ key: 'good', value: good.bytes }]);
    const registry = await guardedRegistry(registryUrl, 'registry-key', 'registry-secret');
    try {
      const env = (password: string) => validateEnv(brokers, t, { SCHEMA_REGISTRY_URL: registry.url, SCHEMA_REGISTRY_USERNAME: 'registry-key', SCHEMA_REGISTRY_PASSWORD: password });
      validate = startService('apps/validate/src/main.ts', env('not-the-registry-secret'));
      const warning = JSON.parse(await validate.waitFor(/batch aborted; retrying/));
      expect(warning).toMatchObject({ code: 'VALIDATE_REGISTRY_UNAVAILABLE', details: { registry: { code: 'REGISTRY_UNAUTHORIZED' } } });
      expect(validate.output.join('\n')).not.toContain('not-the-registry-secret');
      expect(await readTopics(brokers, [t.valid.orders, t.dlq], 0, 1000, 2000)).toEqual([]);
      await stopService(validate);

      validate = startService('apps/validate/src/main.ts', env('registry-secret'));
      const out = await readTopics(brokers, [t.valid.orders, t.dlq], 1, 60_000, 2000);
      expect(out.map((m) => `${m.topic}:${m.key?.toString()}`)).toEqual([`${t.valid.orders}:${String(good.event.order_id)}`]);
    } finally {
      await registry.close();
    }
  });

  it('refuses to start with a registry username but no password', async () => {
    const t = topicsFor('registry-auth');
    validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { SCHEMA_REGISTRY_URL: 'http://127.0.0.1:9', SCHEMA_REGISTRY_USERNAME: 'registry-key' }));
    expect(await validate.exited).not.toBe(0);
    expect(validate.output.join('\n')).toContain('SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD must be set together (SCHEMA_REGISTRY_PASSWORD is empty)');
  });
});
