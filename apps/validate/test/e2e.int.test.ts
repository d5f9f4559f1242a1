import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { AvroDecoder, CONTRACTS, HEADERS, encodeSingleObject, parseIsoMillis } from '@sluice/contracts';
import { KafkaProducer, type ConsumedMessage } from '@sluice/kafka';
import { ROOT, click, createTopics, inventory, order, readTopics, startService, stopService, testBrokers, topicsFor, validateEnv, type Child } from './support';

const brokers = testBrokers();
const t = topicsFor('e2e');
const API_KEY = 'e2e-key-0123456789abcdefghijklmnop';
let ingest: Child | undefined;
let validate: Child | undefined;
let baseUrl = '';
const avro = new AvroDecoder(Object.values(CONTRACTS));

function eventIdOfValid(m: ConsumedMessage): string {
  const decoded = avro.decode(m.value as Buffer);
  if (!decoded.ok) throw new Error(`valid topic holds undecodable bytes: ${JSON.stringify(decoded.issues)}`);
  return (decoded.value.event as { event_id: string }).event_id;
}

async function post(body: string, contentType: string) {
  const res = await fetch(`${baseUrl}/v1/events`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': contentType }, body });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  await createTopics(brokers, [t.raw, t.valid.orders, t.valid.inventory, t.valid.clickstream]);
  await createTopics(brokers, [t.dlq], 2);
  validate = startService('apps/validate/src/main.ts', validateEnv(brokers, t, { VALIDATE_MAX_EVENT_BYTES: '4096' }));
  ingest = startService('apps/ingest/src/main.ts', {
    KAFKA_BROKERS: brokers,
    INGEST_PORT: '0',
    OPS_PORT: '0',
    INGEST_RAW_TOPIC: t.raw,
    INGEST_API_KEYS: JSON.stringify([{ producer: 'e2e-producer', key: API_KEY, contracts: ['*'], envelopeProducers: ['shop', 'wms', 'web'] }]),
    LOG_LEVEL: 'info',
  });
  const line = await ingest.waitFor(/ingest listening/);
  baseUrl = JSON.parse(line).address;
  await validate.waitFor(/validate running/);
});

afterAll(async () => {
  await stopService(ingest);
  await stopService(validate);
});

it('every accepted event ends in exactly one of valid/DLQ, and the DLQ tool counts, shows and replays them', async () => {
  const expectedValid = new Set<string>();

  // Through ingest: good events mixed with hostile ones, which ingest rejects at once.
  const good = Array.from({ length: 240 }, (_, i) => (i % 3 === 0 ? order() : i % 3 === 1 ? inventory() : click()));
  const hostile = ['{oops', '42', JSON.stringify(order({ version: 'x' })), JSON.stringify(order({ contract: 'nope' })), JSON.stringify(order({}, { total_cents: -1 }))];
  const lines = good.map((e) => JSON.stringify(e));
  hostile.forEach((h, i) => lines.splice(i * 40 + 7, 0, h));
  const nd = await post(lines.join('\n'), 'application/x-ndjson');
  expect(nd.status).toBe(207);
  expect(nd.body).toMatchObject({ accepted: 240, rejected: 5 });
  const arrayGood = [order(), inventory(), click()];
  const arr = await post(JSON.stringify([...arrayGood, { not: 'an event' }]), 'application/json');
  expect(arr.body).toMatchObject({ accepted: 3, rejected: 1 });
  for (const e of [...good, ...arrayGood]) expectedValid.add(e.event_id as string);

  // Straight into raw, as producers that bypass ingest would: validate is the authority here.
  const directValid = [order(), click()];
  const avroEvent = inventory();
  const avroBytes = encodeSingleObject(CONTRACTS.inventory.latest.schema, { ...avroEvent, contract: undefined, event_time: parseIsoMillis(avroEvent.event_time as string) });
  for (const e of [...directValid, avroEvent]) expectedValid.add(e.event_id as string);
  const bad: { value: Buffer | null; reason: string; headers?: Record<string, string | string[]> }[] = [
    { value: Buffer.from('{not json'), reason: 'EVENT_NOT_JSON' },
    { value: null, reason: 'EVENT_NOT_JSON' },
    { value: Buffer.from([0xff, 0xfe, 0x00, 0x01]), reason: 'EVENT_NOT_UTF8' },
    { value: Buffer.from([0xc3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8, 9]), reason: 'AVRO_WRITER_UNKNOWN' },
    { value: Buffer.from(JSON.stringify(order({ contract: 'payments' }))), reason: 'CONTRACT_UNKNOWN' },
    // A header name repeated: the DLQ record, `show` and the replay keep every value.
    { value: Buffer.from(JSON.stringify(order({}, { currency: 'euro' }))), reason: 'RULE_PATTERN', headers: { tag: ['first', 'second'] } },
    { value: Buffer.from(JSON.stringify(order({ event_time: '2999-01-01T00:00:00Z' }))), reason: 'RULE_TIMESTAMP_FUTURE' },
    { value: Buffer.from(JSON.stringify(order({}, { customer_id: 'x'.repeat(5000) }))), reason: 'EVENT_TOO_LARGE' },
    { value: Buffer.from(JSON.stringify(order())), reason: 'CONTRACT_MISMATCH', headers: { [HEADERS.contract]: 'inventory' } },
    { value: Buffer.from(JSON.stringify(order()).replace('{', '{"__proto__":{"x":1},')), reason: 'EVENT_FORBIDDEN_KEY' },
    // Older than EVENT_MAX_AGE_MS: a replay, which skips the age rule, lands it.
    { value: Buffer.from(JSON.stringify(order({ event_time: new Date(Date.now() - 30 * 86_400_000).toISOString() }))), reason: 'RULE_TIMESTAMP_EXPIRED' },
  ];
  const producer = new KafkaProducer({ brokers, clientId: 'e2e-direct' });
  await producer.connect();
  try {
    await producer.sendBatch([
      ...directValid.map((e) => ({ topic: t.raw, key: String(e.order_id ?? e.user_id), value: Buffer.from(JSON.stringify(e)) })),
      { topic: t.raw, key: 'avro', value: avroBytes },
      ...bad.map((b, i) => ({ topic: t.raw, key: `bad-${i}`, value: b.value, headers: b.headers })),
    ]);
  } finally {
    await producer.close();
  }

  const validTopics = Object.values(t.valid);
  const total = expectedValid.size + bad.length;
  const all = await readTopics(brokers, [...validTopics, t.dlq], total);
  const valid = all.filter((m) => m.topic !== t.dlq);
  const dlq = all.filter((m) => m.topic === t.dlq);
  expect({ valid: valid.length, dlq: dlq.length }).toEqual({ valid: expectedValid.size, dlq: bad.length });

  const validIds = valid.map(eventIdOfValid);
  expect(new Set(validIds).size).toBe(validIds.length);
  expect(new Set(validIds)).toEqual(expectedValid);
  for (const m of valid) {
    // Each event sits on its own contract's valid topic, with at most a sampled trace context.
    const decoded = avro.decode(m.value as Buffer);
    const contract = decoded.ok ? decoded.value.contract.name : 'undecodable';
    expect(m.topic).toBe(t.valid[contract as keyof typeof t.valid]);
    expect(Object.keys(m.headers).filter((h) => h !== 'traceparent')).toEqual([]);
  }

  const reasons = dlq.map((m) => m.headers['sluice-dlq-reason']?.toString()).sort();
  expect(reasons).toEqual(bad.map((b) => b.reason).sort());
  for (const m of dlq) {
    const i = Number(m.key?.toString().replace('bad-', ''));
    expect(m.value === null ? null : Buffer.from(m.value)).toEqual(bad[i].value === null ? null : bad[i].value);
    expect(m.headers['sluice-dlq-source-topic']?.toString()).toBe(t.raw);
    expect(Number(m.headers['sluice-dlq-source-offset']?.toString())).toBeGreaterThanOrEqual(0);
    expect(m.headers['sluice-dlq-detail']?.toString()).toContain(bad[i].reason);
    expect(Date.parse(m.headers['sluice-dlq-time']?.toString() ?? '')).toBeGreaterThan(Date.now() - 600_000);
  }

  // The DLQ tool, as an operator would run it.
  const cli = async (...args: string[]) => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), '--tsconfig', path.join(ROOT, 'tsconfig.base.json'), path.join(ROOT, 'tools/src/dlq/cli.ts'), ...args, '--brokers', brokers, '--dlq-topic', t.dlq, '--raw-topic', t.raw], { cwd: ROOT });
    return stdout.trim().split('\n').map((l) => JSON.parse(l));
  };
  const [count] = await cli('count', '--json');
  expect(count.total).toBe(bad.length);
  expect(count.groups.find((g: { reason: string }) => g.reason === 'RULE_PATTERN')).toEqual({ reason: 'RULE_PATTERN', contract: 'orders', count: 1 });
  const listed = await cli('list', '--json', '--contract', 'orders');
  expect(listed.map((l: { reason: string }) => l.reason).sort()).toEqual(['EVENT_FORBIDDEN_KEY', 'RULE_PATTERN', 'RULE_TIMESTAMP_EXPIRED', 'RULE_TIMESTAMP_FUTURE']);
  // Oversize records are refused before decoding and an unknown contract name is not trusted as
  // a label, so their contract is "unknown"; a mismatch
  // is filed under the contract the header named.
  const unknown = await cli('list', '--json', '--contract', 'unknown');
  expect(unknown.map((l: { reason: string }) => l.reason).sort()).toEqual(['AVRO_WRITER_UNKNOWN', 'CONTRACT_UNKNOWN', 'EVENT_NOT_JSON', 'EVENT_NOT_JSON', 'EVENT_NOT_UTF8', 'EVENT_TOO_LARGE']);
  const pattern = listed.find((l: { reason: string }) => l.reason === 'RULE_PATTERN');
  const [shown] = await cli('show', pattern.at);
  expect(shown).toMatchObject({ reason: 'RULE_PATTERN', contract: 'orders', source: { topic: t.raw } });
  expect(JSON.parse(shown.value).event_id).toBe(pattern.eventId);
  expect(shown.headers.tag).toEqual(['first', 'second']);
  const patternRecord = dlq.find((m) => m.headers['sluice-dlq-reason']?.toString() === 'RULE_PATTERN');
  expect(patternRecord?.repeatedHeaders?.tag.map(String)).toEqual(['first', 'second']);

  // Replay the RULE_PATTERN record: still invalid (nothing was fixed), so it comes back to the
  // DLQ once more — with the same event_id and a marker of where it was replayed from.
  const [replayed] = await cli('replay', '--reason', 'RULE_PATTERN');
  expect(replayed.replayed).toBe(1);
  const after = await readTopics(brokers, [t.dlq], bad.length + 1);
  expect(after.length).toBe(bad.length + 1);
  const again = after.filter((m) => m.headers['sluice-replay-of'] !== undefined);
  expect(again.length).toBe(1);
  expect(JSON.parse(again[0].value!.toString()).event_id).toBe(pattern.eventId);
  expect(again[0].headers['sluice-replay-of']?.toString()).toBe(`${t.dlq}/${pattern.at.replace(':', '/')}`);
  expect(again[0].repeatedHeaders?.tag.map(String)).toEqual(['first', 'second']);
  // The replay went to raw under the original key, so it keeps its entity's partition and order.
  const replayedRaw = (await readTopics(brokers, [t.raw], 1)).filter((m) => m.headers['sluice-replay-of'] !== undefined);
  expect(replayedRaw.map((m) => m.key?.toString())).toEqual([`bad-${bad.findIndex((b) => b.reason === 'RULE_PATTERN')}`]);

  // Replaying the same reason again sends the event once, not also from its failed copy: both
  // held it, and replaying both doubled its DLQ copies at every run.
  const failedCopies = await cli('list', '--json', '--replays', 'only');
  expect(failedCopies.map((l: { replayOf: string }) => l.replayOf)).toEqual([`${t.dlq}/${pattern.at.replace(':', '/')}`]);
  const [second] = await cli('replay', '--reason', 'RULE_PATTERN');
  expect(second).toMatchObject({ replayed: 1, failedReplaysOfReplayedRecords: 1 });
  expect((await readTopics(brokers, [t.dlq], bad.length + 2)).length).toBe(bad.length + 2);
  // Selected alone (its original not selected, or gone with the DLQ's retention), a failed copy is replayed.
  const [copyAlone] = await cli('replay', '--at', failedCopies[0].at);
  expect(copyAlone.replayed).toBe(1);
  expect((await readTopics(brokers, [t.dlq], bad.length + 3)).length).toBe(bad.length + 3);

  // A position that holds no record (mistyped) is an answer, not {"replayed":0} and success.
  const mistyped = await promisify(execFile)(process.execPath, [path.join(ROOT, 'node_modules/tsx/dist/cli.mjs'), '--tsconfig', path.join(ROOT, 'tsconfig.base.json'), path.join(ROOT, 'tools/src/dlq/cli.ts'), 'replay', '--at', '0:424242', '--brokers', brokers, '--dlq-topic', t.dlq, '--raw-topic', t.raw], { cwd: ROOT }).catch((err: { code: number; stdout: string; stderr: string }) => err);
  expect({ code: (mistyped as { code?: number }).code, stdout: JSON.parse(mistyped.stdout.trim()).replayed, stderr: mistyped.stderr.trim() }).toEqual({ code: 1, stdout: 0, stderr: 'no DLQ record matching the filters at 0:424242' });

  // A replay that now passes: the expired event, past the age rule, lands on its valid topic.
  const expired = listed.find((l: { reason: string }) => l.reason === 'RULE_TIMESTAMP_EXPIRED');
  const [landed] = await cli('replay', '--at', expired.at);
  expect(landed.replayed).toBe(1);
  const validAfter = await readTopics(brokers, [t.valid.orders], valid.filter((m) => m.topic === t.valid.orders).length + 1);
  expect(validAfter.map(eventIdOfValid).filter((id) => id === expired.eventId)).toHaveLength(1);
});
