import { randomUUID } from 'node:crypto';
import {
  AvroDecoder,
  canonicalForm,
  CONTRACTS,
  createRegistryClient,
  decodeEvent,
  encodeConfluent,
  learnSchemaId,
  orders,
  ORDERS_V1,
  ORDERS_V2,
  registerContract,
  RegistryError,
  resolveValue,
  sampleOrderJson,
  type OrderEvent,
  type RegistryClient,
} from '../src';
import { testRegistryUrl } from '@sluice/testing';

// Runs against the real Confluent-compatible registry started by tools/services.d/20-registry.sh.
const url = testRegistryUrl();

const subject = (what: string) => `sluice-test-${what}-${randomUUID()}-value`;
const NOW = Date.now();

function validOrder(n: number): OrderEvent {
  const result = decodeEvent(sampleOrderJson(n, NOW), { contract: 'orders', now: NOW });
  if (!result.ok || result.name !== 'orders') throw new Error('fixture invalid');
  return result.event;
}

describe('schema registry client against a real registry', () => {
  let client: RegistryClient;

  beforeAll(() => {
    client = createRegistryClient({ url, fetch, retries: 2, backoffMs: 50 });
  });

  it('registers a contract history idempotently and reads it back by id and by version', async () => {
    const s = subject('orders');
    const ids = await registerContract(client, orders, s);
    expect([...ids.keys()]).toEqual([1, 2]);
    expect(ids.get(1)).not.toBe(ids.get(2));
    // A fresh client (no cache) gets the same ids: registration is idempotent on the server.
    const again = await registerContract(createRegistryClient({ url, fetch }), orders, s);
    expect(again).toEqual(ids);
    expect(await client.listVersions(s)).toEqual([1, 2]);
    expect(await client.getCompatibility(s)).toBe('FULL_TRANSITIVE');
    const v1 = await client.getSubjectVersion(s, 1);
    expect(v1).toMatchObject({ version: 1, id: ids.get(1) });
    expect(canonicalForm(JSON.parse(v1.schema))).toBe(canonicalForm(ORDERS_V1));
    const latest = await client.getSubjectVersion(s, 'latest');
    expect(latest.version).toBe(2);
    expect(canonicalForm(JSON.parse(await client.getSchemaById(ids.get(2) as number)))).toBe(canonicalForm(ORDERS_V2));
    expect(await client.listSubjects()).toContain(s);
  });

  it('looks up a registered schema without registering, and answers undefined for an unknown one', async () => {
    const s = subject('lookup');
    const id = await client.register(s, ORDERS_V1);
    expect(await client.lookup(s, ORDERS_V1)).toMatchObject({ id, version: 1 });
    expect(await client.lookup(s, ORDERS_V2)).toBeUndefined();
    expect(await client.lookup(subject('absent'), ORDERS_V2)).toBeUndefined();
  });

  it('checks compatibility and refuses to register a breaking change, without retrying', async () => {
    const s = subject('compat');
    await registerContract(client, orders, s);
    const retyped = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown }[] };
    retyped.fields.find((f) => f.name === 'version')!.type = 'string';
    const check = await client.checkCompatibility(s, retyped);
    expect(check.compatible).toBe(false);
    expect(check.messages.join(' ')).toMatch(/string|STRING|long|LONG/);
    expect((await client.checkCompatibility(s, ORDERS_V2)).compatible).toBe(true);
    const err = await client.register(s, retyped).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegistryError);
    expect(err).toMatchObject({ code: 'REGISTRY_INCOMPATIBLE', retryable: false, status: 409 });
    expect(await client.listVersions(s)).toEqual([1, 2]);
  });

  it('sets and reads subject compatibility levels', async () => {
    const s = subject('config');
    await client.register(s, ORDERS_V1);
    await client.setCompatibility('BACKWARD', s);
    expect(await client.getCompatibility(s)).toBe('BACKWARD');
    await client.setCompatibility('FORWARD_TRANSITIVE', s);
    expect(await client.getCompatibility(s)).toBe('FORWARD_TRANSITIVE');
  });

  it('answers clear 4xx errors: unknown subject, version, id, invalid schema', async () => {
    await expect(client.listVersions(subject('none'))).rejects.toMatchObject({ code: 'REGISTRY_SUBJECT_NOT_FOUND', status: 404 });
    const s = subject('versions');
    await client.register(s, ORDERS_V1);
    await expect(client.getSubjectVersion(s, 9)).rejects.toMatchObject({ code: 'REGISTRY_VERSION_NOT_FOUND', registryErrorCode: 40402 });
    await expect(client.getSchemaById(2_000_000_000)).rejects.toMatchObject({ code: 'REGISTRY_SCHEMA_NOT_FOUND', retryable: false });
    await expect(client.register(subject('bad'), '{"type": "record", "name": ')).rejects.toMatchObject({ code: 'REGISTRY_SCHEMA_INVALID', status: 422 });
  });

  it('deletes a subject', async () => {
    const s = subject('delete');
    await registerContract(client, orders, s);
    expect(await client.deleteSubject(s)).toEqual([1, 2]);
    expect(await client.listSubjects()).not.toContain(s);
  });

  it('reports a registry that does not answer as retryable REGISTRY_UNAVAILABLE after its retries', async () => {
    let attempts = 0;
    const counting: typeof fetch = (input, init) => {
      attempts++;
      return fetch(input, init);
    };
    // Port 9 (discard) on loopback: nothing listens there in the test environment.
    const dead = createRegistryClient({ url: 'http://127.0.0.1:9', fetch: counting, retries: 2, backoffMs: 10 });
    await expect(dead.listSubjects()).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE', retryable: true });
    expect(attempts).toBe(3);
  });

  it('round-trips Confluent-framed events across schema versions with registry ids', async () => {
    const s = subject('wire');
    const ids = await registerContract(client, orders, s);
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const event = validOrder(10); // has a coupon code (v2 field)

    // v2 writer → latest (v2) reader.
    const v2Bytes = encodeConfluent(ids.get(2) as number, ORDERS_V2, event);
    expect(decodeEvent(v2Bytes, { avro: decoder, now: NOW }).ok).toBe(false); // id not learned yet
    await learnSchemaId(decoder, createRegistryClient({ url, fetch }), ids.get(2) as number);
    const v2Read = decodeEvent(v2Bytes, { avro: decoder, now: NOW });
    expect(v2Read.ok && v2Read.event).toEqual(event);

    // v1 writer → latest reader: the new optional field takes its default.
    const v1Event: Record<string, unknown> = { ...(resolveValue(ORDERS_V2, ORDERS_V1, event) as Record<string, unknown>), schema_version: 1 };
    expect((v1Event.payload as Record<string, unknown>).coupon_code).toBeUndefined();
    const v1Bytes = encodeConfluent(ids.get(1) as number, ORDERS_V1, v1Event);
    await learnSchemaId(decoder, client, ids.get(1) as number);
    // A v2 body (coupon_code set) declaring v1 holds a field its version does not have.
    const claimsV1 = decodeEvent(encodeConfluent(ids.get(2) as number, ORDERS_V2, { ...event, schema_version: 1 }), { avro: decoder, now: NOW });
    expect(!claimsV1.ok && claimsV1.issues.map((i) => `${i.code} ${i.path}`)).toEqual(['EVENT_FIELD_UNKNOWN /payload/coupon_code']);
    const v1Read = decodeEvent(v1Bytes, { avro: decoder, now: NOW });
    if (!v1Read.ok || v1Read.name !== 'orders') throw new Error(JSON.stringify(v1Read));
    expect(v1Read.event.payload?.coupon_code).toBeNull();
    expect(v1Read.event.payload?.total_cents).toBe(event.payload?.total_cents);
  });
});
