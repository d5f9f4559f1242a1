/**
 * CPU per message of the Kafka client, by what a record carries and how it is acknowledged:
 * where the per-event cost of ingest, validate and merge-compaction's consumers goes. Process
 * CPU (JS thread and librdkafka's threads) over the messages, same broker, same run.
 *
 *   SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092 npx tsx --tsconfig tsconfig.base.json libs/kafka/bench/client-cost.bench.ts [messages]
 *
 * Produce: the native call alone (no headers, no report), with the 3 headers an ingest record
 * carries, with a delivery report per message, then through this lib (KafkaProducer.sendBatch,
 * TransactionalProducer.produce + commit). Consume: the native call with 0 and 3 headers, then
 * BatchConsumer.poll with 3 headers.
 */
import { KafkaConsumer, Producer, type MessageHeader } from '@confluentinc/kafka-javascript';
import { BatchConsumer, KafkaAdmin, KafkaProducer, TransactionalProducer } from '../src';

const brokers = process.env.SLUICE_TEST_KAFKA_BROKERS ?? '';
if (!brokers) throw new Error('set SLUICE_TEST_KAFKA_BROKERS');
const N = Number(process.argv[2] ?? 200_000);
const SEND = 5_000;
const value = Buffer.alloc(300, 'x');
const HEADERS = { 'sluice-producer': Buffer.from('shop-key'), 'sluice-received-at': Buffer.from(String(Date.now())), 'sluice-contract': Buffer.from('orders') };
const NATIVE_HEADERS: MessageHeader[] = Object.entries(HEADERS).map(([k, v]) => ({ [k]: v }));

interface Cost {
  readonly case: string;
  readonly cpuMicrosPerMessage: number;
  readonly messagesPerSecond: number;
}

/** Runs `work` and reports its process CPU per message and wall rate. */
async function measure(name: string, work: () => Promise<void>): Promise<Cost> {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  await work();
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - wall) / 1000;
  const cost = { case: name, cpuMicrosPerMessage: Number(((used.user + used.system) / N).toFixed(2)), messagesPerSecond: Math.round(N / seconds) };
  console.error(`${name}: ${cost.cpuMicrosPerMessage} µs CPU/message, ${cost.messagesPerSecond}/s`);
  return cost;
}

const done = (resolve: () => void, reject: (e: unknown) => void) => (err: unknown) => (err ? reject(err) : resolve());

async function nativeProduce(topic: string, headers: boolean, reports: boolean): Promise<void> {
  const p = new Producer({ 'bootstrap.servers': brokers, dr_cb: reports, acks: 'all', 'enable.idempotence': true, 'linger.ms': 5, 'compression.codec': 'lz4' } as never);
  await new Promise<void>((resolve, reject) => p.connect({}, done(resolve, reject)));
  p.setPollInBackground(true);
  let reported = 0;
  p.on('delivery-report', () => reported++);
  for (let i = 0; i < N; i++) {
    for (;;) {
      try {
        p.produce(topic, -1, value, `k${i % 10_000}`, null, undefined, headers ? NATIVE_HEADERS : undefined);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 1)); // queue full: let librdkafka send
      }
    }
  }
  await new Promise<void>((resolve, reject) => p.flush(60_000, done(resolve, reject)));
  while (reports && reported < N) await new Promise((r) => setTimeout(r, 1));
  await new Promise<void>((resolve) => p.disconnect(() => resolve()));
}

const records = (topic: string, from: number) => Array.from({ length: Math.min(SEND, N - from) }, (_, i) => ({ topic, key: `k${(from + i) % 10_000}`, value, headers: HEADERS }));

async function libProduce(topic: string): Promise<void> {
  const p = new KafkaProducer({ brokers, clientId: 'bench-cost' });
  await p.connect();
  for (let sent = 0; sent < N; sent += SEND) await p.sendBatch(records(topic, sent));
  await p.close();
}

async function transactionalProduce(topic: string): Promise<void> {
  const p = new TransactionalProducer({ brokers, clientId: 'bench-cost', transactionalId: `bench-cost-${Date.now()}` });
  await p.connect();
  for (let sent = 0; sent < N; sent += SEND) {
    await p.begin();
    await p.produce(records(topic, sent));
    await p.commit();
  }
  await p.close();
}

async function nativeConsume(topic: string): Promise<void> {
  const c = new KafkaConsumer({ 'bootstrap.servers': brokers, 'group.id': `bench-cost-${Math.random()}`, 'enable.auto.commit': false, 'fetch.queue.backoff.ms': 20 } as never, { 'auto.offset.reset': 'earliest' } as never);
  await new Promise<void>((resolve, reject) => c.connect({}, done(resolve, reject)));
  c.setDefaultConsumeTimeout(100);
  c.subscribe([topic]);
  for (let n = 0; n < N; ) n += (await new Promise<unknown[]>((resolve, reject) => c.consume(SEND, (e, m) => (e ? reject(e) : resolve(m))))).length;
  await new Promise<void>((resolve) => c.disconnect(() => resolve()));
}

async function libConsume(topic: string): Promise<void> {
  const c = new BatchConsumer({ brokers, clientId: 'bench-cost', groupId: `bench-cost-${Math.random()}`, topics: [topic], maxBatchMessages: SEND });
  await c.connect();
  for (let n = 0; n < N; ) n += (await c.poll()).length;
  await c.close();
}

async function main(): Promise<void> {
  const admin = new KafkaAdmin({ brokers });
  const stamp = Date.now().toString(36);
  const bare = `bench-cost-bare-${stamp}`;
  const withHeaders = `bench-cost-headers-${stamp}`;
  const scratch = `bench-cost-scratch-${stamp}`;
  for (const name of [bare, withHeaders, scratch]) await admin.createTopic({ name, partitions: 8 });
  try {
    const produce = [
      await measure('native produce, no headers, no report', () => nativeProduce(bare, false, false)),
      await measure('native produce, 3 headers, no report', () => nativeProduce(withHeaders, true, false)),
      await measure('native produce, 3 headers, report per message', () => nativeProduce(scratch, true, true)),
      await measure('KafkaProducer.sendBatch, 3 headers', () => libProduce(scratch)),
      await measure('TransactionalProducer.produce + commit, 3 headers', () => transactionalProduce(scratch)),
    ];
    // Consumers start at the earliest offset: the timed part includes the group join (~3 s
    // rebalance delay), so compare CPU per message, which a waiting consumer does not spend.
    const consume = [
      await measure('native consume, no headers', () => nativeConsume(bare)),
      await measure('native consume, 3 headers', () => nativeConsume(withHeaders)),
      await measure('BatchConsumer.poll, 3 headers', () => libConsume(withHeaders)),
    ];
    console.log(JSON.stringify({ when: new Date().toISOString(), messages: N, valueBytes: value.length, produce, consume }, null, 2));
  } finally {
    await admin.deleteTopics([bare, withHeaders, scratch]).catch(() => undefined);
    await admin.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
