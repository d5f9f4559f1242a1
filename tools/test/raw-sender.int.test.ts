import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KafkaAdmin } from '@sluice/kafka';
import { freePort } from '@sluice/testing';
import { RawSender } from '../src/bench/load';
import { OwnBroker, sleep } from '../src/bench/stack';
import { readTopic } from '../src/dlq/read-dlq';
import { EventStream, Oracle } from '../src/generator';

// The load's raw sender across a broker outage: a batch that fails is sent again through a new
// producer, and every batch it reported sent is in the topic once the broker is back. A PRIVATE
// broker, stopped and started here (never the shared test broker).
describe('raw sender across a broker restart', () => {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), 'raw-sender-'));
  let broker: OwnBroker;
  beforeAll(async () => {
    broker = new OwnBroker(await freePort({ following: 1 }), path.join(workDir, 'kafka'));
    await broker.start();
  }, 180_000);
  afterAll(async () => {
    await broker.stop().catch(() => undefined);
    rmSync(workDir, { recursive: true, force: true });
  }, 120_000);

  it('replaces the producer after a failed batch and delivers every batch once the broker returns', async () => {
    const topic = 'raw-sender-restart';
    const admin = new KafkaAdmin({ brokers: broker.brokers, requestTimeoutMs: 30_000 });
    await admin.createTopic({ name: topic, partitions: 2 });
    await admin.close();
    const oracle = new Oracle();
    const stream = new EventStream({ seed: 3, runId: 'rs', clock: () => Date.now() });
    const sender = new RawSender(broker.brokers, topic, oracle, { giveUpMs: 120_000, deliveryTimeoutMs: 3_000 });
    const batch = () => Array.from({ length: 20 }, () => stream.next());
    try {
      const before = batch();
      await sender.send(before);
      await broker.stop();
      const during = batch();
      const sent = sender.send(during);
      await sleep(8_000); // past two delivery timeouts: the first producer failed and was replaced
      await broker.start();
      await sent;
      expect(sender.replaced).toBeGreaterThanOrEqual(1);
      expect(sender.retries).toBeGreaterThanOrEqual(1);
      const bodies = new Set((await readTopic(broker.brokers, topic, 20_000, 'read_uncommitted')).map((m) => m.value?.toString('utf8') ?? ''));
      for (const e of [...before, ...during]) expect(bodies.has(e.body)).toBe(true);
    } finally {
      await sender.close();
    }
  }, 240_000);
});
