// One contracts workload, measured alone in this process (see contracts-bench.ts, which bundles
// this file with deploy/bundle.sh, as the services are bundled, and runs it once per workload):
//   node main.js <workload> <seconds> <events>
// Prints one JSON line: { workload, opsPerCpuSecond, ... }.
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

/**
 * Runs `fn` over the inputs round-robin for `seconds` of this process's CPU time after a warm-up;
 * returns ops per CPU-second. CPU time, not wall time, because the machine is shared: a wall
 * clock would count the time other processes held the core. It includes the GC's helper threads.
 */
function measure<T>(inputs: readonly T[], seconds: number, fn: (input: T) => unknown): number {
  const cpuMicros = (since: NodeJS.CpuUsage) => {
    const u = process.cpuUsage(since);
    return u.user + u.system;
  };
  const warm = process.cpuUsage();
  let i = 0;
  while (cpuMicros(warm) < 300_000) for (let k = 0; k < 100; k++) fn(inputs[i++ % inputs.length]);
  let ops = 0;
  const start = process.cpuUsage();
  const budget = seconds * 1e6;
  let used = 0;
  while (used < budget) {
    for (let k = 0; k < 1000; k++) fn(inputs[(ops + k) % inputs.length]);
    ops += 1000;
    used = cpuMicros(start);
  }
  return ops / (used / 1e6);
}

const NOW = Date.now();
let sink = 0;

/** Orders events as JSON bytes, in schema v2 or as a producer still on v1 sends them (no coupon_code). */
function orderJsonBytes(events: number, schemaVersion: 1 | 2 = 2): Uint8Array[] {
  const encoder = new TextEncoder();
  return Array.from({ length: events }, (_, n) => {
    const event = sampleOrderJson(n + 1, NOW - (n % 1000), schemaVersion === 1 ? { schema_version: 1 } : {});
    if (schemaVersion === 1) delete (event.payload as Record<string, unknown>).coupon_code;
    return encoder.encode(JSON.stringify(event));
  });
}

function orderEvents(jsonBytes: Uint8Array[]): OrderEvent[] {
  return jsonBytes.map((b) => {
    const r = decodeEvent(b, { contract: 'orders', now: NOW });
    if (!r.ok || r.name !== 'orders') throw new Error(`sample event invalid: ${JSON.stringify(r)}`);
    return r.event;
  });
}

/** Each workload builds its inputs, then returns the per-event function to measure. */
const WORKLOADS: Record<string, (events: number) => { inputs: readonly Uint8Array[]; fn: (b: Uint8Array) => void }> = {
  // What the pipeline would cost with no checks at all (JSON.parse trusts everything).
  baselineJsonParseAvroEncode: (events) => {
    const type = avroTypeOf(orders.latest.schema);
    return {
      inputs: orderJsonBytes(events),
      fn: (b) => {
        const v = JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.length).toString('utf8')) as Record<string, unknown>;
        v.event_time = Date.parse(v.event_time as string);
        sink += type.toBuffer(v).length;
      },
    };
  },
  jsonValidateAvroEncode: (events) => ({
    inputs: orderJsonBytes(events),
    fn: (b) => {
      const r = decodeEvent(b, { contract: 'orders', now: NOW });
      if (!r.ok) throw new Error('unexpected invalid event');
      sink += encodeSingleObject(orders.latest.schema, r.event).length;
    },
  }),
  // A v1 producer's event: checked against v1, resolved into v2, encoded in v2 (as validate does).
  jsonV1ValidateAvroEncode: (events) => ({
    inputs: orderJsonBytes(events, 1),
    fn: (b) => {
      const r = decodeEvent(b, { contract: 'orders', now: NOW });
      if (!r.ok || r.writerVersion !== 1) throw new Error('unexpected invalid event or writer version');
      sink += encodeSingleObject(orders.latest.schema, r.event).length;
    },
  }),
  jsonValidateOnly: (events) => ({
    inputs: orderJsonBytes(events),
    fn: (b) => {
      if (!decodeEvent(b, { contract: 'orders', now: NOW }).ok) throw new Error('unexpected invalid event');
    },
  }),
  baselineAvscFromBuffer: (events) => {
    const type = avroTypeOf(orders.latest.schema);
    return {
      inputs: orderEvents(orderJsonBytes(events)).map((e) => encodeSingleObject(orders.latest.schema, e)),
      fn: (b) => {
        sink += (type.fromBuffer(Buffer.from(b.buffer, b.byteOffset + 10, b.length - 10)) as OrderEvent).version;
      },
    };
  },
  avroDecodeSameSchema: (events) => {
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    return {
      inputs: orderEvents(orderJsonBytes(events)).map((e) => encodeSingleObject(orders.latest.schema, e)),
      fn: (b) => {
        const r = decoder.decode(b);
        if (!r.ok) throw new Error('unexpected decode failure');
        sink += (r.value.event as OrderEvent).version;
      },
    };
  },
  avroDecodeV1WriterV2Reader: (events) => {
    const decoder = new AvroDecoder(Object.values(CONTRACTS));
    return {
      inputs: orderEvents(orderJsonBytes(events)).map((e) => encodeSingleObject(ORDERS_V1, resolveValue(orders.latest.schema, ORDERS_V1, e))),
      fn: (b) => {
        const r = decoder.decode(b);
        if (!r.ok) throw new Error('unexpected decode failure');
        sink += (r.value.event as OrderEvent).version;
      },
    };
  },
  avroDecodeAndValidate: (events) => ({
    inputs: orderEvents(orderJsonBytes(events)).map((e) => encodeSingleObject(orders.latest.schema, e)),
    fn: (b) => {
      if (!decodeEvent(b, { now: NOW }).ok) throw new Error('unexpected invalid event');
    },
  }),
};

/** The workload names, in the order the parent runs them each round. */
export const WORKLOAD_NAMES = Object.keys(WORKLOADS);

function main(): void {
  const [name, seconds, events] = process.argv.slice(2);
  const workload = WORKLOADS[name];
  if (workload === undefined) throw new Error(`unknown workload "${name}"; one of ${WORKLOAD_NAMES.join(', ')}`);
  const { inputs, fn } = workload(Number(events));
  const opsPerCpuSecond = measure(inputs, Number(seconds), fn);
  const avgBytes = Math.round(inputs.reduce((s, b) => s + b.length, 0) / inputs.length);
  process.stdout.write(`${JSON.stringify({ workload: name, opsPerCpuSecond, avgInputBytes: avgBytes, checksum: sink % 997 })}\n`);
}

// Runs only as the bundled entry point, not when the parent imports the workload names.
if (require.main === module) main();
