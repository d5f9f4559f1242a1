import { randomBytes } from 'node:crypto';
import { BatchConsumer, KafkaAdmin, KafkaProducer } from '@sluice/kafka';

/** The machine's bare Kafka rate through the same broker and client, no processing. */
export interface CeilingResult {
  readonly events: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
}

/** Records sent through the chain before the clock starts: the groups join and the topics warm up. */
const WARM_UP_EVENTS = 5000;

/**
 * produce → consume → produce → consume through two topics of `partitions` partitions with
 * libs/kafka and nothing in between: the ceiling Sluice's ingest → validate → merge path is
 * compared with (three hops of the same records, same value sizes, same broker). The clock
 * starts after a warm-up pass has gone through the whole chain: otherwise the two consumer
 * groups' joins and a cold broker's first segments counted in the ceiling and lowered it.
 */
export async function measurePassThrough(o: { brokers: string; values: readonly string[]; events: number; partitions: number; timeoutMs?: number }): Promise<CeilingResult> {
  const tag = randomBytes(4).toString('hex');
  const a = `ceiling-${tag}-a`;
  const b = `ceiling-${tag}-b`;
  const admin = new KafkaAdmin({ brokers: o.brokers, clientId: 'sluice-ceiling' });
  await admin.createTopic({ name: a, partitions: o.partitions });
  await admin.createTopic({ name: b, partitions: o.partitions });
  const source = new KafkaProducer({ brokers: o.brokers, clientId: 'ceiling-source' });
  const relayOut = new KafkaProducer({ brokers: o.brokers, clientId: 'ceiling-relay' });
  const relayIn = new BatchConsumer({ brokers: o.brokers, clientId: 'ceiling-relay', groupId: `ceiling-${tag}-relay`, topics: [a], maxBatchMessages: 5000 });
  const sink = new BatchConsumer({ brokers: o.brokers, clientId: 'ceiling-sink', groupId: `ceiling-${tag}-sink`, topics: [b], maxBatchMessages: 5000 });
  await Promise.all([source.connect(), relayOut.connect(), relayIn.connect(), sink.connect()]);
  const deadline = Date.now() + (o.timeoutMs ?? 300_000);
  let produced = 0;
  let relayed = 0;
  let sunk = 0;
  /** Sends `n` more records through the chain; resolves when the sink has every record so far. */
  const pass = async (n: number): Promise<void> => {
    const target = produced + n;
    const produce = (async () => {
      while (produced < target) {
        const k = Math.min(5000, target - produced);
        const batch = Array.from({ length: k }, (_, i) => ({ topic: a, key: `k${(produced + i) % 10_000}`, value: o.values[(produced + i) % o.values.length] }));
        await source.sendBatch(batch);
        produced += k;
      }
    })();
    const relay = (async () => {
      while (relayed < target && Date.now() < deadline) {
        const msgs = await relayIn.poll();
        if (msgs.length === 0) continue;
        await relayOut.sendBatch(msgs.map((m) => ({ topic: b, key: m.key, value: m.value })));
        relayed += msgs.length;
      }
    })();
    const drain = (async () => {
      while (sunk < target && Date.now() < deadline) sunk += (await sink.poll()).length;
    })();
    await Promise.all([produce, relay, drain]);
    if (sunk < target) throw new Error(`BENCH_CEILING_TIMEOUT: ${sunk} of ${target} records passed through in time`);
  };
  try {
    await pass(WARM_UP_EVENTS);
    const started = performance.now();
    await pass(o.events);
    const seconds = (performance.now() - started) / 1000;
    return { events: o.events, seconds, eventsPerSecond: o.events / seconds };
  } finally {
    await Promise.allSettled([source.close(), relayOut.close(), relayIn.close(), sink.close()]);
    await admin.deleteTopics([a, b]).catch(() => undefined);
    await admin.close();
  }
}
