/**
 * The hostile corpus: inputs that must be refused with a clear reason and never crash a
 * service. `id` is embedded in the bytes when the input can carry one (so the DLQ audit can
 * match it); `withoutId` inputs cannot, and are counted instead.
 */
export interface PoisonInput {
  readonly name: string;
  readonly bytes: Buffer;
  /** The event_id inside the bytes, when there is one. */
  readonly id?: string;
}

const HUGE = 600_000; // over the 512 KiB event limit chaos runs give ingest and validate; under the broker message limit
/** Just under the client's 1,000,000-byte message limit: copied whole into the DLQ with its headers, it would not fit. */
const NEAR_MESSAGE_LIMIT = 999_000;

/** The corpus, with event ids `<runId>-p<n>` where an input can carry one. */
export function poisonCorpus(runId: string): PoisonInput[] {
  let n = 0;
  const id = () => `${runId}-p${n++}`;
  const withId = (name: string, make: (id: string) => string | Buffer): PoisonInput => {
    const i = id();
    const b = make(i);
    return { name, bytes: typeof b === 'string' ? Buffer.from(b, 'utf8') : b, id: i };
  };
  const order = (i: string, extra = '') =>
    `{"contract":"orders","event_id":"${i}","event_time":"${new Date().toISOString()}","producer":"p","schema_version":2,"version":1,"op":"upsert","order_id":"o-${i}"${extra},"payload":{"customer_id":"c","status":"paid","total_cents":1,"currency":"EUR","item_count":1,"coupon_code":null}}`;
  return [
    withId('truncated JSON', (i) => `{"contract":"orders","event_id":"${i}","payload":{"status":`),
    withId('duplicate key', (i) => order(i, ',"order_id":"twice"')),
    withId('__proto__ key', (i) => order(i, ',"__proto__":{"admin":true}')),
    withId('constructor key in payload', (i) => order(i).replace('"payload":{', '"payload":{"constructor":{"x":1},')),
    withId('number beyond 2^53', (i) => order(i).replace('"total_cents":1', '"total_cents":9007199254740993')),
    withId('NaN literal', (i) => order(i).replace('"total_cents":1', '"total_cents":NaN')),
    withId('invalid UTF-8 inside a string', (i) => Buffer.concat([Buffer.from(`{"contract":"orders","event_id":"${i}","producer":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])),
    withId('deep nesting', (i) => `{"contract":"orders","event_id":"${i}","payload":${'['.repeat(5000)}${']'.repeat(5000)}}`),
    withId('unknown contract', (i) => order(i).replace('"contract":"orders"', '"contract":"../../etc/passwd"')),
    withId('event_id with SQL', (i) => order(i).replace(`"event_id":"${i}"`, `"event_id":"${i}","x":"'; DROP TABLE silver_orders; --"`)),
    withId('event_time far in the future', (i) => order(i).replace(/"event_time":"[^"]+"/, '"event_time":"2999-01-01T00:00:00Z"')),
    withId('event_time not a date', (i) => order(i).replace(/"event_time":"[^"]+"/, '"event_time":"yesterday"')),
    withId('negative version', (i) => order(i).replace('"version":1', '"version":-5')),
    withId('string where a number belongs', (i) => order(i).replace('"total_cents":1', '"total_cents":"1"')),
    withId('oversized event', (i) => order(i).replace('"coupon_code":null', `"coupon_code":"${'A'.repeat(HUGE)}"`)),
    withId('array instead of payload', (i) => order(i).replace(/"payload":\{.*\}\}$/, '"payload":[1,2,3]}')),
    withId('control characters in key', (i) => order(i).replace(`"order_id":"o-${i}"`, `"order_id":"o\\u0000\\u001b[2J"`)),
    { name: 'empty value', bytes: Buffer.alloc(0) },
    { name: 'single zero byte (Avro framing)', bytes: Buffer.from([0]) },
    { name: 'Confluent header, unknown schema id', bytes: Buffer.from([0, 0, 0, 0x30, 0x39, 2, 4, 6]) },
    { name: 'single-object header, unknown fingerprint', bytes: Buffer.from([0xc3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0]) },
    { name: 'UTF-16 text', bytes: Buffer.from('{"a":1}', 'utf16le') },
    { name: 'a JSON array', bytes: Buffer.from('[1,2,3]') },
    { name: 'a JSON string', bytes: Buffer.from('"orders"') },
    { name: 'random bytes', bytes: Buffer.from(Array.from({ length: 256 }, (_, k) => (k * 131 + 7) % 256)) },
    { name: 'not JSON, near the message size limit', bytes: Buffer.alloc(NEAR_MESSAGE_LIMIT, 0x78) },
  ];
}
