/**
 * Short throughput comparison, same broker, same run, same settings (acks=all, idempotent, lz4,
 * linger 5 ms): this lib's producer/consumer (node-rdkafka-style API) against the client's
 * KafkaJS-compatible API. Ratios matter, not absolute numbers (shared 2-core machine).
 *
 *   SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092 npx tsx libs/kafka/bench/produce-consume.bench.ts [messages]
 */
import { KafkaJS } from '@confluentinc/kafka-javascript';
import { BatchConsumer, KafkaAdmin, KafkaProducer } from '../src';

const brokers = process.env.SLUICE_TEST_KAFKA_BROKERS ?? '';
if (!brokers) throw new Error('set SLUICE_TEST_KAFKA_BROKERS');
const TOTAL = Number(process.argv[2] ?? 100_000);
const REQUEST = 500; // messages per send call, like one ingest HTTP batch
const CONCURRENCY = 8; // send calls in flight
const value = Buffer.alloc(200, 'x');

async function inFlight(count: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await send(next++);
    }),
  );
}

async function main(): Promise<void> {
  const admin = new KafkaAdmin({ brokers });
  const stamp = Date.now().toString(36);
  const t1 = `bench-lib-${stamp}`;
  const t2 = `bench-kjs-${stamp}`;
  await admin.createTopic({ name: t1, partitions: 8 });
  await admin.createTopic({ name: t2, partitions: 8 });
  const requests = Math.ceil(TOTAL / REQUEST);
  const batch = (topic: string, r: number) => Array.from({ length: REQUEST }, (_, i) => ({ topic, key: `k${r * REQUEST + i}`, value }));

  const lib = new KafkaProducer({ brokers, compression: 'lz4', lingerMs: 5 });
  await lib.connect();
  let t = performance.now();
  await inFlight(requests, (r) => lib.sendBatch(batch(t1, r)));
  const libProduce = (requests * REQUEST) / ((performance.now() - t) / 1000);
  await lib.close();

  const kafka = new KafkaJS.Kafka({ kafkaJS: { brokers: brokers.split(',') } });
  const kjs = kafka.producer({ kafkaJS: { idempotent: true, acks: -1, compression: KafkaJS.CompressionTypes.LZ4 }, 'linger.ms': 5 });
  await kjs.connect();
  t = performance.now();
  await inFlight(requests, (r) => kjs.send({ topic: t2, messages: batch(t2, r).map((m) => ({ key: m.key, value: m.value })) }));
  const kjsProduce = (requests * REQUEST) / ((performance.now() - t) / 1000);
  await kjs.disconnect();

  const consumer = new BatchConsumer({ brokers, groupId: `bench-${stamp}`, topics: [t1], maxBatchMessages: 1000 });
  await consumer.connect();
  let got = 0;
  let started = 0;
  while (got < requests * REQUEST) {
    const b = await consumer.poll();
    if (b.length > 0 && started === 0) started = performance.now();
    got += b.length;
  }
  const libConsume = got / ((performance.now() - started) / 1000);
  await consumer.close();

  const kc = kafka.consumer({ kafkaJS: { groupId: `bench-kjs-${stamp}`, fromBeginning: true, autoCommit: false } });
  await kc.connect();
  await kc.subscribe({ topic: t2 });
  let kgot = 0;
  let kstart = 0;
  const kjsConsume = await new Promise<number>((resolve) => {
    void kc.run({
      eachBatch: async ({ batch: b }) => {
        if (kstart === 0) kstart = performance.now();
        kgot += b.messages.length;
        if (kgot >= requests * REQUEST) resolve(kgot / ((performance.now() - kstart) / 1000));
      },
    });
  });
  await kc.disconnect();
  await admin.deleteTopics([t1, t2]);
  await admin.close();

  const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US')} msg/s`;
  console.log(`messages ${requests * REQUEST}, ${REQUEST}/send, ${CONCURRENCY} sends in flight, 200-byte values`);
  console.log(`produce  lib ${fmt(libProduce)}  kafkajs-compat ${fmt(kjsProduce)}  ratio ${(libProduce / kjsProduce).toFixed(2)}`);
  console.log(`consume  lib ${fmt(libConsume)}  kafkajs-compat ${fmt(kjsConsume)}  ratio ${(libConsume / kjsConsume).toFixed(2)}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
