import { AvroDecoder } from '../avro/codec';
import { CONTRACTS, ORDERS_V2 } from '../contracts';
import { createRegistryClient, registryAuth, RegistryError, type FetchLike } from './client';
import { learnSchemaId } from './contracts';

// Unit tests of the client's own logic (retry, backoff, error mapping, caching) with a scripted
// fetch. The real-registry behaviour is tested in test/registry.int.test.ts.
type Step = { status: number; body?: unknown } | Error;

function scripted(steps: Step[]) {
  const calls: { url: string; method: string; body?: string }[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, method: init.method, body: init.body });
    const step = steps.shift();
    if (step === undefined) throw new Error('no more scripted answers');
    if (step instanceof Error) throw step;
    return { status: step.status, text: async () => (step.body === undefined ? '' : JSON.stringify(step.body)) };
  };
  return { fetch, calls };
}

const noSleep = { sleep: async () => undefined, random: () => 0.5 };

describe('registry client', () => {
  it('retries network errors and 5xx with doubling backoff, then succeeds', async () => {
    const delays: number[] = [];
    const { fetch, calls } = scripted([new TypeError('fetch failed'), { status: 503, body: { error_code: 50003, message: 'busy' } }, { status: 200, body: { id: 7 } }]);
    const client = createRegistryClient({ url: 'http://r/', fetch, backoffMs: 10, sleep: async (ms) => void delays.push(ms), random: () => 0.5 });
    await expect(client.register('s-value', { type: 'string' })).resolves.toBe(7);
    expect(delays).toEqual([10, 20]);
    expect(calls.map((c) => c.url)).toEqual(Array(3).fill('http://r/subjects/s-value/versions'));
    expect(JSON.parse(calls[0].body ?? '{}')).toEqual({ schema: '{"type":"string"}', schemaType: 'AVRO' });
  });

  it('gives up after the configured retries with a retryable REGISTRY_UNAVAILABLE', async () => {
    const { fetch, calls } = scripted(Array(3).fill({ status: 500, body: { error_code: 50001, message: 'store down' } }));
    const client = createRegistryClient({ url: 'http://r', fetch, retries: 2, ...noSleep });
    const err = await client.getSchemaById(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegistryError);
    expect(err).toMatchObject({ code: 'REGISTRY_UNAVAILABLE', retryable: true, status: 500, registryErrorCode: 50001 });
    expect(calls).toHaveLength(3);
  });

  it.each([
    [404, 40401, 'REGISTRY_SUBJECT_NOT_FOUND'],
    [404, 40402, 'REGISTRY_VERSION_NOT_FOUND'],
    [404, 40403, 'REGISTRY_SCHEMA_NOT_FOUND'],
    [409, 409, 'REGISTRY_INCOMPATIBLE'],
    [422, 42201, 'REGISTRY_SCHEMA_INVALID'],
    [422, 42203, 'REGISTRY_REQUEST_REJECTED'],
    [401, undefined, 'REGISTRY_UNAUTHORIZED'],
  ])('does not retry a %i (%s) and names it %s', async (status, errorCode, code) => {
    const { fetch, calls } = scripted([{ status, body: { error_code: errorCode, message: 'no' } }]);
    const client = createRegistryClient({ url: 'http://r', fetch, ...noSleep });
    await expect(client.getSubjectVersion('s', 1)).rejects.toMatchObject({ code, retryable: false, status });
    expect(calls).toHaveLength(1);
  });

  // An id past the wire format's range: Confluent's registry answers a bare 404, read as a
  // misconfigured URL and retried, so validate retried such an event for ever.
  it('answers an id outside the wire format\'s range as REGISTRY_SCHEMA_NOT_FOUND without asking', async () => {
    const { fetch, calls } = scripted([]);
    const client = createRegistryClient({ url: 'http://r', fetch, ...noSleep });
    await expect(client.getSchemaById(2 ** 31)).rejects.toMatchObject({ code: 'REGISTRY_SCHEMA_NOT_FOUND' });
    expect(calls).toHaveLength(0);
  });

  it('caches ids by id and registrations by canonical schema, but never "latest"', async () => {
    const version = { subject: 's', version: 1, id: 3, schema: '"string"' };
    const { fetch, calls } = scripted([{ status: 200, body: { schema: '"string"' } }, { status: 200, body: { id: 3 } }, { status: 200, body: version }, { status: 200, body: version }]);
    const client = createRegistryClient({ url: 'http://r', fetch, ...noSleep });
    expect(await client.getSchemaById(3)).toBe('"string"');
    expect(await client.getSchemaById(3)).toBe('"string"');
    expect(await client.register('s', { type: 'string' })).toBe(3);
    expect(await client.register('s', '"string"')).toBe(3); // same canonical form, no second call
    await client.getSubjectVersion('s', 'latest');
    await client.getSubjectVersion('s', 'latest');
    expect(calls).toHaveLength(4);
  });

  it('answers lookup of an unknown schema with undefined, and reports a non-JSON success as REGISTRY_BAD_RESPONSE', async () => {
    const { fetch } = scripted([{ status: 404, body: { error_code: 40403, message: 'Schema not found' } }]);
    await expect(createRegistryClient({ url: 'http://r', fetch, ...noSleep }).lookup('s', '"int"')).resolves.toBeUndefined();
    const broken: FetchLike = async () => ({ status: 200, text: async () => '<html>proxy</html>' });
    await expect(createRegistryClient({ url: 'http://r', fetch: broken, ...noSleep }).listSubjects()).rejects.toMatchObject({ code: 'REGISTRY_BAD_RESPONSE' });
  });

  it('takes credentials from both settings or neither, naming the one missing', () => {
    expect(registryAuth('', '')).toBeUndefined();
    expect(registryAuth('key', 'secret')).toEqual({ username: 'key', password: 'secret' });
    expect(() => registryAuth('key', '')).toThrow('SCHEMA_REGISTRY_USERNAME is set without SCHEMA_REGISTRY_PASSWORD');
    expect(() => registryAuth('', 'secret')).toThrow('SCHEMA_REGISTRY_PASSWORD is set without SCHEMA_REGISTRY_USERNAME');
  });

  it('sends basic auth and the registry content type', async () => {
    let seen: Record<string, string> = {};
    const fetch: FetchLike = async (_url, init) => {
      seen = init.headers;
      return { status: 200, text: async () => '[]' };
    };
    await createRegistryClient({ url: 'http://r', fetch, auth: { username: 'u', password: 'p' } }).listSubjects();
    expect(seen.Authorization).toBe(`Basic ${Buffer.from('u:p').toString('base64')}`);
    expect(seen['Content-Type']).toBe('application/vnd.schemaregistry.v1+json');
  });

  it('keeps code and retryable through JSON', () => {
    const json = JSON.parse(JSON.stringify(new RegistryError('REGISTRY_TIMEOUT', 'slow', { retryable: true })));
    expect(json).toMatchObject({ code: 'REGISTRY_TIMEOUT', retryable: true, message: 'slow' });
  });
});

describe('learnSchemaId', () => {
  const answering = (schema: unknown): FetchLike => async () => ({ status: 200, text: async () => JSON.stringify({ schema: JSON.stringify(schema) }) });

  it('teaches the decoder a known contract schema', async () => {
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    const contract = await learnSchemaId(decoder, createRegistryClient({ url: 'http://r', fetch: answering(ORDERS_V2) }), 5);
    expect(contract.name).toBe('orders');
    expect(decoder.knowsSchemaId(5)).toBe(true);
  });

  it('refuses a schema of no known contract, and one the reader cannot resolve', async () => {
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    await expect(learnSchemaId(decoder, createRegistryClient({ url: 'http://r', fetch: answering({ type: 'record', name: 'x.Y', fields: [] }) }), 6)).rejects.toMatchObject({
      code: 'REGISTRY_SCHEMA_NOT_FOUND',
    });
    const retyped = JSON.parse(JSON.stringify(ORDERS_V2)) as { fields: { name: string; type: unknown }[] };
    retyped.fields.find((f) => f.name === 'order_id')!.type = 'int';
    await expect(learnSchemaId(decoder, createRegistryClient({ url: 'http://r', fetch: answering(retyped) }), 7)).rejects.toMatchObject({ code: 'REGISTRY_SCHEMA_INVALID' });
    expect(decoder.knowsSchemaId(7)).toBe(false);
  });
});
