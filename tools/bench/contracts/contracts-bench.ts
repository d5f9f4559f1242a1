// Benchmark of the contracts hot paths on one core (not a test; see docs/bench/contracts.md):
//   1. JSON bytes → decodeEvent (strict parse + schema + rules) → Avro single-object bytes
//   2. Avro decode: single-object bytes → event (same schema; and v1 writer → v2 reader)
// Rates are per CPU-second of one core (the process is single-threaded). Each is measured beside a baseline in the same run (JSON.parse + avsc with no checks), so the
// ratio says what validation costs on this machine whatever its load.
//
//   npx tsx tools/bench/contracts/contracts-bench.ts [--events 20000] [--seconds 2] [--json]
import {
  AvroDecoder,
  CONTRACTS,
  avroTypeOf,
  decodeEvent,
  encodeSingleObject,
  orders,
  ORDERS_V1,
  resolveValue,
  sampleOrderJson,
  type OrderEvent,
} from '@sluice/contracts';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const EVENTS = arg('events', 20_000);
const SECONDS = arg('seconds', 2);
const NOW = Date.now();

/**
 * Runs `fn` over the inputs round-robin for `SECONDS` of this process's CPU time after a warm-up;
 * returns ops per CPU-second. CPU time, not wall time, because the machine is shared: a wall
 * clock would count the time other processes held the core.
 */
function measure<T>(inputs: readonly T[], fn: (input: T) => unknown): number {
  const cpuMicros = (since: NodeJS.CpuUsage) => {
    const u = process.cpuUsage(since);
    return u.user + u.system;
  };
  const warm = process.cpuUsage();
  let i = 0;
  while (cpuMicros(warm) < 300_000) for (let k = 0; k < 100; k++) fn(inputs[i++ % inputs.length]);
  let ops = 0;
  const start = process.cpuUsage();
  const budget = SECONDS * 1e6;
  let used = 0;
  while (used < budget) {
    for (let k = 0; k < 1000; k++) fn(inputs[(ops + k) % inputs.length]);
    ops += 1000;
    used = cpuMicros(start);
  }
  return ops / (used / 1e6);
}

const encoder = new TextEncoder();
const jsonBytes = Array.from({ length: EVENTS }, (_, n) => encoder.encode(JSON.stringify(sampleOrderJson(n + 1, NOW - (n % 1000)))));
const decoded: OrderEvent[] = jsonBytes.map((b) => {
  const r = decodeEvent(b, { contract: 'orders', now: NOW });
  if (!r.ok || r.name !== 'orders') throw new Error(`sample event invalid: ${JSON.stringify(r)}`);
  return r.event;
});
const avroV2 = decoded.map((e) => encodeSingleObject(orders.latest.schema, e));
const avroV1 = decoded.map((e) => encodeSingleObject(ORDERS_V1, resolveValue(orders.latest.schema, ORDERS_V1, e)));
const type = avroTypeOf(orders.latest.schema);
const decoder = new AvroDecoder(Object.values(CONTRACTS));
let sink = 0;

const results = {
  events: EVENTS,
  avgJsonBytes: Math.round(jsonBytes.reduce((s, b) => s + b.length, 0) / EVENTS),
  avgAvroBytes: Math.round(avroV2.reduce((s, b) => s + b.length, 0) / EVENTS),
  baselineJsonParseAvroEncode: measure(jsonBytes, (b) => {
    // what the pipeline would cost with no checks at all (JSON.parse trusts everything)
    const v = JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.length).toString('utf8')) as Record<string, unknown>;
    v.event_time = Date.parse(v.event_time as string);
    sink += type.toBuffer(v).length;
  }),
  jsonValidateAvroEncode: measure(jsonBytes, (b) => {
    const r = decodeEvent(b, { contract: 'orders', now: NOW });
    if (!r.ok) throw new Error('unexpected invalid event');
    sink += encodeSingleObject(orders.latest.schema, r.event).length;
  }),
  jsonValidateOnly: measure(jsonBytes, (b) => {
    if (!decodeEvent(b, { contract: 'orders', now: NOW }).ok) throw new Error('unexpected invalid event');
  }),
  baselineAvscFromBuffer: measure(avroV2, (b) => {
    sink += (type.fromBuffer(b.subarray(10)) as OrderEvent).version;
  }),
  avroDecodeSameSchema: measure(avroV2, (b) => {
    const r = decoder.decode(b);
    if (!r.ok) throw new Error('unexpected decode failure');
    sink += (r.value.event as OrderEvent).version;
  }),
  avroDecodeV1WriterV2Reader: measure(avroV1, (b) => {
    const r = decoder.decode(b);
    if (!r.ok) throw new Error('unexpected decode failure');
    sink += (r.value.event as OrderEvent).version;
  }),
  avroDecodeAndValidate: measure(avroV2, (b) => {
    const r = decodeEvent(b, { now: NOW });
    if (!r.ok) throw new Error('unexpected invalid event');
  }),
};

if (process.argv.includes('--json')) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  const k = (n: number) => `${Math.round(n / 1000)}k/s`;
  process.stdout.write(
    [
      `orders events: ${results.events} distinct, ~${results.avgJsonBytes} B JSON, ~${results.avgAvroBytes} B Avro single-object`,
      `JSON → validate → Avro encode      ${k(results.jsonValidateAvroEncode)}  (goal ≥ 200k/s; baseline JSON.parse + avsc encode, no checks: ${k(results.baselineJsonParseAvroEncode)}, ratio ${(results.jsonValidateAvroEncode / results.baselineJsonParseAvroEncode).toFixed(2)})`,
      `JSON → validate (no encode)        ${k(results.jsonValidateOnly)}`,
      `Avro decode, same schema           ${k(results.avroDecodeSameSchema)}  (goal ≥ 500k/s; baseline avsc fromBuffer: ${k(results.baselineAvscFromBuffer)})`,
      `Avro decode, v1 writer → v2 reader ${k(results.avroDecodeV1WriterV2Reader)}`,
      `Avro decode + validate rules       ${k(results.avroDecodeAndValidate)}`,
      `(checksum ${sink % 997})`,
    ].join('\n') + '\n',
  );
}
