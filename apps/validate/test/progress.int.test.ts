import { loadConfig } from '@sluice/config';
import { KafkaAdmin, KafkaProducer, TransactionalProducer } from '@sluice/kafka';
import { createLogger } from '@sluice/telemetry';
import { build, type ValidateService } from '../src/app';
import { validateConfigSchema } from '../src/config';
import { createTopics, order, testBrokers, topicsFor, validateEnv } from './support';

const brokers = testBrokers();
const t = topicsFor('progress');
const WINDOW_MS = 5_000;
const services: ValidateService[] = [];
let producer: KafkaProducer;
let admin: KafkaAdmin;

function instance(id: string): ValidateService {
  const config = loadConfig(
    validateConfigSchema,
    validateEnv(brokers, t, {
      VALIDATE_INSTANCE_ID: id,
      VALIDATE_PROGRESS_WINDOW_MS: String(WINDOW_MS),
      VALIDATE_TRANSACTION_TIMEOUT_MS: '10000',
      VALIDATE_STALL_TIMEOUT_MS: '20000',
      // Long enough that a loaded machine does not rebalance the group mid-test (a rebalance
      // would also undo the pause that stands in for a wedged fetcher below).
      VALIDATE_SESSION_TIMEOUT_MS: '30000',
    }),
  );
  const service = build({ config, logger: createLogger({ service: 'validate', level: 'warn', base: { instance: id } }) });
  services.push(service);
  void service.run().catch((err) => console.error('run failed', err));
  return service;
}

async function feedUntil(done: () => boolean | Promise<boolean>, timeoutMs: number, eachTurn: () => void = () => undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done()) && Date.now() < deadline) {
    eachTurn();
    await producer.sendBatch(Array.from({ length: 20 }, () => ({ topic: t.raw, key: 'k', value: Buffer.from(JSON.stringify(order())) })));
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

beforeAll(async () => {
  await createTopics(brokers, [t.raw], 1);
  await createTopics(brokers, [t.dlq, t.valid.orders, t.valid.inventory, t.valid.clickstream]);
  producer = new KafkaProducer({ brokers, clientId: 'progress-feed' });
  await producer.connect();
  admin = new KafkaAdmin({ brokers, clientId: 'progress-observer' });
});

/** Both instances are members of a settled group (until then the partition may still move). */
async function bothJoined(): Promise<boolean> {
  const group = await admin.describeGroup(t.group).catch(() => undefined);
  return group?.state === 'stable' && group.members.length === 2;
}

afterAll(async () => {
  await Promise.all(services.map((s) => s.close().catch(() => undefined)));
  await producer.close();
  await admin.close();
});

it('a busy instance and an idle extra replica stay live; the holder stops being live once it fetches nothing while raw fills', async () => {
  // One raw partition, two instances: one holds it, the other is a legitimately idle replica.
  const a = instance('a');
  const b = instance('b');
  const holders = () => [a, b].filter((s) => s.processor.consumer.assignment().length > 0);
  // The first member to join holds the partition until the second one's join moves it, so the
  // holder is named only once the group has settled with both.
  await feedUntil(async () => holders().length === 1 && a.totals().valid + b.totals().valid > 0 && (await bothJoined()), 60_000);
  expect(await bothJoined()).toBe(true);
  expect(holders()).toHaveLength(1);
  const [holder] = holders();
  const idle = holder === a ? b : a;

  // Three windows of steady traffic: the holder commits, the idle one sees the partition held.
  await feedUntil(() => false, 3 * WINDOW_MS + 1_000);
  expect(holder.progress()).toEqual({ stuck: false });
  expect(idle.progress()).toEqual({ stuck: false });
  expect(holder.live() && idle.live()).toBe(true);
  expect(holders()).toEqual([holder]);

  // The holder's fetcher goes quiet (a paused partition looks, from outside, like a wedged one)
  // while records keep arriving: after two or three windows it is no longer live (the bound here
  // leaves room for a loaded machine); the idle one still is.
  // Paused again on every turn: should the group rebalance anyway, the new assignment is unpaused.
  const consumer = holder.processor.consumer;
  const quiet = () => consumer.pause(consumer.assignment().filter((p) => !consumer.paused().some((q) => q.partition === p.partition && q.topic === p.topic)));
  await feedUntil(() => !holder.live(), 6 * WINDOW_MS + 5_000, quiet);
  expect(holder.progress()).toMatchObject({ stuck: true, reason: 'not-fetching', partitions: [`${t.raw}:0`] });
  expect(holder.live()).toBe(false);
  expect(idle.progress()).toEqual({ stuck: false });
}, 180_000);

// A producer that writes to raw in transactions leaves a commit marker after its records. The
// group's committed offset stops before it, so the partition looked one offset behind for good,
// and the instance holding it restarted every other window.
it('an instance holding a partition that ends in a transaction marker stays live', async () => {
  const own = topicsFor('progress-markers');
  await createTopics(brokers, [own.raw], 1);
  await createTopics(brokers, [own.dlq, own.valid.orders, own.valid.inventory, own.valid.clickstream]);
  const direct = new TransactionalProducer({ brokers, clientId: 'progress-direct', transactionalId: `progress-direct-${own.raw}` });
  await direct.connect();
  try {
    await direct.begin();
    await direct.produce([{ topic: own.raw, key: 'k', value: Buffer.from(JSON.stringify(order())) }]);
    await direct.commit();
    const config = loadConfig(
      validateConfigSchema,
      validateEnv(brokers, own, {
        VALIDATE_INSTANCE_ID: 'markers',
        VALIDATE_PROGRESS_WINDOW_MS: String(WINDOW_MS),
        VALIDATE_TRANSACTION_TIMEOUT_MS: '10000',
        VALIDATE_STALL_TIMEOUT_MS: '20000',
      }),
    );
    const service = build({ config, logger: createLogger({ service: 'validate', level: 'warn', base: { instance: 'markers' } }) });
    services.push(service);
    void service.run().catch((err) => console.error('run failed', err));
    const deadline = Date.now() + 60_000;
    while (service.totals().valid === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(service.totals().valid).toBe(1);
    // The group's offset stops at the marker: one offset "behind" as the broker counts.
    const [offsets] = await admin.fetchLag(own.group, [own.raw]);
    expect(offsets.lag).toBe(1);
    await new Promise((r) => setTimeout(r, 3 * WINDOW_MS + 1_000));
    expect(service.progress()).toEqual({ stuck: false });
    expect(service.live()).toBe(true);
  } finally {
    await direct.close();
  }
}, 120_000);
