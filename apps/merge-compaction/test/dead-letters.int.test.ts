import { CONTRACTS, DLQ_TOPIC, HEADERS } from '@sluice/contracts';
import { BatchConsumer, KafkaAdmin, KafkaProducer, type ConsumedMessage } from '@sluice/kafka';
import { sampleValue } from '@sluice/telemetry';
import { build, type MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { brokers, diffAgainstOracle, encode, ORACLE_SPECS, produce, rand, streamOptions, TestEnv, waitFor } from './support/harness';

// Records on a valid topic that tier 1 cannot put into bronze — no value, bytes that are not
// Avro, another contract's event — go to the DLQ with a reason and their source coordinates,
// and the stream goes on. Bug: they were counted and logged, then skipped: the bronze commit
// after them covered their offsets, so they were gone from the pipeline.
describe('merge-compaction dead letters', () => {
  const env = new TestEnv('dlq', [CONTRACTS.orders]);
  const dlqTopic = `${env.prefix}${DLQ_TOPIC.name}`;
  const sends = generateStream([ORACLE_SPECS.orders], streamOptions(31, 200));
  let app: MergeApp | undefined;

  beforeAll(async () => {
    await env.createTopics();
    const admin = new KafkaAdmin({ brokers: brokers() });
    await admin.createTopic({ name: dlqTopic, partitions: 1 });
    await admin.close();
  });

  afterAll(async () => {
    await app?.stop();
    await env.close();
  });

  it('sends undecodable valid-topic records to the DLQ exactly once each and carries on', async () => {
    const topic = env.topic(CONTRACTS.orders);
    const clickstream = generateStream([ORACLE_SPECS.clickstream], streamOptions(32, 1))[0];
    const bad = [
      { partition: 0, key: 'bad-empty', value: null, reason: 'MERGE_RECORD_EMPTY' },
      { partition: 1, key: 'bad-bytes', value: Buffer.from('{"not":"avro"}'), reason: 'AVRO_FRAMING_UNKNOWN' },
      // This worker serves orders only, so its decoder does not know clickstream's schema.
      { partition: 2, key: 'bad-contract', value: encode(CONTRACTS.clickstream, clickstream.event), reason: 'AVRO_WRITER_UNKNOWN' },
    ];
    await produce(env, sends.slice(0, 100));
    const producer = new KafkaProducer({ brokers: brokers() });
    await producer.connect();
    const reports = await producer.sendBatch(bad.map((b) => ({ topic, partition: b.partition, key: b.key, value: b.value, headers: { [HEADERS.producer]: 'test-producer' } })));
    await producer.close();
    await produce(env, sends.slice(100));
    // And one as the last record of its partition: only a commit of its own place covers it.
    const tail = { partition: 0, key: 'bad-tail', value: Buffer.from('tail, not avro'), reason: 'AVRO_FRAMING_UNKNOWN' };
    bad.push(tail);
    const tailProducer = new KafkaProducer({ brokers: brokers() });
    await tailProducer.connect();
    reports.push(...(await tailProducer.sendBatch([{ topic, partition: tail.partition, key: tail.key, value: tail.value, headers: { [HEADERS.producer]: 'test-producer' } }])));
    await tailProducer.close();

    app = await build({ config: env.config({ SLUICE_DLQ_TOPIC: dlqTopic }), logger: env.telemetry.logger, metrics: env.telemetry.metrics, metricsText: () => env.telemetry.metricsText() });
    await app.start();
    let problems: string[] = [];
    await waitFor('tables to equal the oracle of the good events', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 90_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    expect(app.tier1!.stats.undecodable).toBe(bad.length);

    const dead = await readAll(dlqTopic, bad.length);
    const byKey = new Map(dead.map((m) => [m.key?.toString('utf8'), m]));
    expect(dead).toHaveLength(bad.length);
    bad.forEach((b, i) => {
      const m = byKey.get(b.key);
      const header = (name: string) => m?.headers[name]?.toString('utf8');
      expect({ key: b.key, value: m?.value ?? null, topic: header(HEADERS.dlqSourceTopic), partition: header(HEADERS.dlqSourcePartition), offset: header(HEADERS.dlqSourceOffset) }).toEqual({
        key: b.key,
        value: b.value,
        topic,
        partition: String(reports[i].partition),
        offset: String(reports[i].offset),
      });
      expect(header(HEADERS.dlqReason)).toBe(b.reason);
      expect(JSON.parse(header(HEADERS.dlqDetail) ?? '[]')[0].code).toBe(header(HEADERS.dlqReason));
      expect({ contract: header(HEADERS.dlqContract), producer: header(HEADERS.dlqProducer) }).toEqual({ contract: 'orders', producer: 'test-producer' });
    });
    // Counted by reason and contract, as validate counts its dead letters.
    const metrics = await env.telemetry.metricsText();
    for (const reason of new Set(bad.map((b) => b.reason))) {
      expect(sampleValue(metrics, 'sluice_merge_compaction_dlq_records_total', { reason, contract: 'orders' })).toBe(bad.filter((b) => b.reason === reason).length);
    }
    // Bronze went past them: its offsets for those partitions cover the dead letters' offsets,
    // the last record of partition 0 too (nothing covered it, and each restart sent it again).
    const bronze = await env.table(CONTRACTS.orders.tables.bronze);
    await waitFor('bronze to cover every dead letter', async () => {
      const snapshot = await bronze!.snapshot();
      return reports.every((r) => Number(snapshot.txnVersion(`bronze:${topic}-${r.partition}`)) >= r.offset);
    }, 30_000, 500);
  }, 180_000); // above the 90 s wait and the DLQ read
});

/** Every record of a topic from its start, once at least `expected` arrived and two more seconds passed (duplicates would show). */
async function readAll(topic: string, expected: number): Promise<ConsumedMessage[]> {
  const consumer = new BatchConsumer({ brokers: brokers(), groupId: `mc-dlq-reader-${rand()}`, topics: [topic], autoOffsetReset: 'earliest', maxBatchWaitMs: 200 });
  await consumer.connect();
  const out: ConsumedMessage[] = [];
  try {
    const deadline = Date.now() + 30_000;
    while (out.length < expected && Date.now() < deadline) out.push(...(await consumer.poll()));
    const settle = Date.now() + 2000;
    while (Date.now() < settle) out.push(...(await consumer.poll()));
  } finally {
    await consumer.close();
  }
  return out;
}
