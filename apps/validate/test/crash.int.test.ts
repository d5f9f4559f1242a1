import { AvroDecoder, CONTRACTS } from '@sluice/contracts';
import { KafkaAdmin, KafkaProducer } from '@sluice/kafka';
import { click, createTopics, inventory, order, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';

const brokers = testBrokers();
const t = topicsFor('crash');
const TOTAL = 8000;
const KILLS = 3;
let validate: Child | undefined;
let steady: Child | undefined;

/**
 * True when validate has committed part, not all, of the input — or has a transaction open
 * right now (the broker refuses to report offsets a pending transaction is about to move).
 * Progress is the group's committed offsets on raw (written without transactions, so offsets
 * count records), not its lag: a fast machine keeps the lag at 0 while the input still arrives.
 */
async function isMidStream(admin: KafkaAdmin): Promise<boolean> {
  try {
    const partitions = await admin.fetchLag(t.group, [t.raw]);
    const committed = partitions.reduce((n, p) => n + (p.committed ?? 0), 0);
    return committed > 0 && committed < TOTAL;
  } catch (err) {
    if (/unstable offsets/i.test((err as Error).message)) return true;
    throw err;
  }
}

afterAll(async () => {
  await stopService(validate, 'SIGKILL');
  await stopService(steady, 'SIGKILL');
});

it(`two instances in one group; SIGKILL of one ${KILLS} times mid-stream neither loses nor duplicates an event (read_committed)`, async () => {
  await createTopics(brokers, [t.raw, t.dlq, ...Object.values(t.valid)]);
  const validIds = new Set<string>();
  const invalidIds = new Set<string>();
  const records = [];
  for (let i = 0; i < TOTAL; i++) {
    const bad = i % 10 === 3;
    const e = bad ? order({}, { total_cents: -i }) : [order, inventory, click][i % 3]();
    (bad ? invalidIds : validIds).add(e.event_id as string);
    records.push({ topic: t.raw, key: String(e.order_id ?? e.user_id ?? e.sku), value: Buffer.from(JSON.stringify(e)) });
  }
  // The input arrives over ~16 s while the kills happen, so on a fast, idle machine the stream
  // is still running when an instance dies (a test named after the run where all of it was
  // processed before the first kill, proving nothing).
  const producer = new KafkaProducer({ brokers, clientId: 'crash-feed' });
  await producer.connect();
  const feeding = (async () => {
    for (let i = 0; i < records.length; i += 200) {
      await producer.sendBatch(records.slice(i, i + 200));
      await new Promise((r) => setTimeout(r, 400));
    }
  })();

  // Small transactions so the stream lasts long enough to be killed in the middle of it.
  const env = validateEnv(brokers, t, { VALIDATE_MAX_BATCH_MESSAGES: '50', LOG_LEVEL: 'info' });
  const admin = new KafkaAdmin({ brokers, clientId: 'crash-admin' });
  let midStreamKills = 0;
  try {
    // A second instance runs throughout: the group shares the partitions between the two.
    steady = startService('apps/validate/src/main.ts', { ...env, VALIDATE_INSTANCE_ID: 'v1' });
    await steady.waitFor(/validate running/);
    for (let k = 0; k < KILLS; k++) {
      validate = startService('apps/validate/src/main.ts', env);
      await validate.waitFor(/partitions assigned/);
      await new Promise((r) => setTimeout(r, 700 + Math.floor(Math.random() * 800)));
      if (await isMidStream(admin)) midStreamKills++;
      validate.proc.kill('SIGKILL');
      await validate.exited;
    }
  } finally {
    await admin.close();
    await feeding.finally(() => producer.close());
  }
  // At least one kill must have hit the stream in the middle, or the test proves nothing.
  expect(midStreamKills).toBeGreaterThanOrEqual(1);

  validate = startService('apps/validate/src/main.ts', env);
  const out = await readTopics(brokers, [...Object.values(t.valid), t.dlq], TOTAL, 90_000, 2000);
  await stopService(validate);
  await stopService(steady);
  // Both instances did work: the partitions were shared.
  expect(steady.output.some((l) => /partitions assigned/.test(l) && /"partition"/.test(l))).toBe(true);

  const avro = new AvroDecoder(Object.values(CONTRACTS));
  const seenValid: string[] = [];
  const seenDlq: string[] = [];
  for (const m of out) {
    if (m.topic === t.dlq) seenDlq.push(JSON.parse(m.value!.toString()).event_id);
    else {
      const d = avro.decode(m.value!);
      if (!d.ok) throw new Error('undecodable valid record');
      seenValid.push((d.value.event as { event_id: string }).event_id);
    }
  }
  expect({ valid: seenValid.length, dlq: seenDlq.length, midStreamKills: midStreamKills > 0 }).toEqual({ valid: validIds.size, dlq: invalidIds.size, midStreamKills: true });
  expect(new Set(seenValid)).toEqual(validIds);
  expect(new Set(seenDlq)).toEqual(invalidIds);
}, 360_000); // above the start, three kill rounds (60 s waits each at most) and the 90 s read
