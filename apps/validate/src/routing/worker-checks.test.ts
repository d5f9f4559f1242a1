import type { Worker } from 'node:worker_threads';
import { CONTRACTS, HEADERS, decodeEvent, encodeConfluent, encodeSingleObject, sampleClickJson, sampleInventoryJson, sampleOrderJson } from '@sluice/contracts';
import { answerChecks } from './check-answer';
import { CHECK_STATUS, type LearnedSchema } from './check-protocol';
import { contractsForValidate } from './contracts-adapter';
import { packBytes } from './packed';
import { RecordingDecoder } from './recording-decoder';
import { routeRecord, routeWithCheck, type RawMessage, type ValidateContracts } from './route';
import { WorkerChecks, type CheckOutcome } from './worker-checks';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const MAX_EVENT_BYTES = 4096;
const LIMITS = { maxBytes: MAX_EVENT_BYTES, maxFutureSkewMs: 60_000, maxAgeMs: 86_400_000 };
const options = { dlqTopic: 'dlq', maxEventBytes: MAX_EVENT_BYTES, now: NOW };
const settings = { validTopicPrefix: 'p.', maxEventBytes: MAX_EVENT_BYTES, limits: LIMITS };

let offset = 0;
function raw(value: Buffer | string | null, headers: Record<string, string | Buffer> = {}, timestamp: number | undefined = NOW - 1000): RawMessage {
  return {
    topic: 'raw',
    partition: offset % 3,
    offset: offset++,
    key: Buffer.from('k'),
    value: typeof value === 'string' ? Buffer.from(value) : value,
    headers: Object.fromEntries(Object.entries({ [HEADERS.producer]: 'shop', ...headers }).map(([k, v]) => [k, Buffer.isBuffer(v) ? v : Buffer.from(v)])),
    ...(timestamp === undefined ? {} : { timestamp }),
  };
}

const order = (n: number, overrides: Record<string, unknown> = {}) => sampleOrderJson(n, NOW - 60_000, { contract: 'orders', ...overrides });
const avroOf = (json: Record<string, unknown>) => {
  const decoded = decodeEvent(Buffer.from(JSON.stringify(json)), { now: NOW });
  if (!decoded.ok) throw new Error('sample invalid');
  return encodeSingleObject(decoded.contract.latest.schema, decoded.event);
};

/** Valid events of every contract, as JSON and Avro, and hostile ones of many kinds. */
function corpus(): RawMessage[] {
  return [
    raw(JSON.stringify(order(1))),
    raw(JSON.stringify(sampleClickJson(2, NOW - 60_000, { contract: 'clickstream' }))),
    raw(JSON.stringify(sampleInventoryJson(3, NOW - 60_000, { contract: 'inventory' }))),
    raw(avroOf(order(4))),
    raw(avroOf(sampleClickJson(5, NOW - 60_000, { contract: 'clickstream' })), { [HEADERS.contract]: 'clickstream' }),
    raw(JSON.stringify(order(6)), { [HEADERS.contract]: 'orders', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
    // A DLQ replay: its marker travels on, and the age rule does not apply.
    raw(JSON.stringify(order(7, { event_time: new Date(NOW - 30 * 86_400_000).toISOString() })), { [HEADERS.replayOf]: 'sluice.dlq/2/7' }),
    raw(JSON.stringify(order(8, { event_time: new Date(NOW - 30 * 86_400_000).toISOString() }))),
    raw(JSON.stringify(order(9, { event_time: new Date(NOW + 3_600_000).toISOString() }))),
    // Timestamps: the one the age rule judges by (two days old, received a day and a half ago:
    // valid; judged at the clock it would be too old), none, ahead of the clock.
    raw(JSON.stringify(order(21, { event_time: new Date(NOW - 2 * 86_400_000).toISOString() })), {}, NOW - 1.5 * 86_400_000),
    raw(JSON.stringify(order(10)), {}, undefined),
    raw(JSON.stringify(order(11)), {}, NOW + 3_600_000),
    raw(null),
    raw(''),
    raw('x'.repeat(MAX_EVENT_BYTES + 1), { [HEADERS.contract]: 'orders' }),
    raw('not json'),
    raw('{"event_id": "a"'),
    raw('[]'),
    raw(Buffer.from([0xff, 0xfe, 0x7b, 0x00])),
    raw(Buffer.from([0, 0, 0, 0, 99, 2, 4])),
    raw('['.repeat(1500) + ']'.repeat(1500)),
    raw(JSON.stringify(order(12)).replace('"version":1', '"version":9007199254740993')),
    raw(`{"__proto__": {"polluted": true},${JSON.stringify(order(13)).slice(1)}`),
    raw(JSON.stringify(order(14)), { [HEADERS.contract]: 'clickstream' }),
    raw(JSON.stringify(order(15)), { [HEADERS.contract]: 'no-such-contract' }),
    raw(JSON.stringify({ ...order(16), payload: { ...(order(16).payload as object), total_cents: -1 } })),
    raw(JSON.stringify(order(17, { producer: 'shop\u202ekcab' }))),
    raw(JSON.stringify({ ...order(18), extra: 1 })),
    raw(JSON.stringify(order(19)), { [HEADERS.replayOf]: 'not a marker' }),
  ];
}

/** What routing makes of each record with the worker's outcomes. */
function routedWith(messages: readonly RawMessage[], outcomes: readonly CheckOutcome[]) {
  return messages.map((m, i) =>
    routeWithCheck(m, () => {
      const o = outcomes[i];
      if (o === null) throw new Error('not checked');
      if ('threw' in o) throw new Error(o.threw);
      return o;
    }, options),
  );
}

describe('WorkerChecks', () => {
  const inline = contractsForValidate({ validTopicPrefix: 'p.', now: () => NOW, limits: LIMITS });
  let checks: WorkerChecks;
  afterEach(async () => {
    await checks?.close();
  });

  it('routes every record exactly as the main thread does, hostile ones included', async () => {
    checks = new WorkerChecks(settings);
    const messages = corpus();
    const outcomes = await checks.check(messages, NOW);
    expect(outcomes).toHaveLength(messages.length);
    const expected = messages.map((m) => routeRecord(m, inline, options));
    expect(routedWith(messages, outcomes)).toEqual(expected);
    // The corpus is worth its name: valid and dead-lettered records, the skipped ones too.
    expect(expected.filter((r) => r.outcome === 'valid').length).toBeGreaterThanOrEqual(8);
    expect(new Set(expected.map((r) => r.reason)).size).toBeGreaterThanOrEqual(12);
    expect(outcomes.filter((o) => o === null)).toHaveLength(3);
    expect(expected[9]).toMatchObject({ outcome: 'valid' });
  }, 30_000);

  it('decodes Confluent-framed events with the schema ids the main thread learned, a new worker too', async () => {
    const decoder = new RecordingDecoder(Object.values(CONTRACTS));
    checks = new WorkerChecks(settings, () => decoder.learned);
    const decoded = decodeEvent(Buffer.from(JSON.stringify(order(20))), { now: NOW });
    if (!decoded.ok) throw new Error('sample invalid');
    const framed = raw(encodeConfluent(4242, CONTRACTS.orders.latest.schema, decoded.event));
    const reasonOf = async () => routedWith([framed], await checks.check([framed], NOW))[0];
    expect(await reasonOf()).toMatchObject({ outcome: 'dlq', reason: 'AVRO_WRITER_UNKNOWN' });
    decoder.addSchemaId(4242, CONTRACTS.orders, CONTRACTS.orders.latest.schema);
    expect(await reasonOf()).toMatchObject({ outcome: 'valid', contract: 'orders', key: (decoded.event as { order_id: string }).order_id });
    // The worker dies: the request it held fails, retryable; the next one starts a new worker,
    // taught every id again.
    const pending = checks.check(corpus(), NOW);
    await (checks as unknown as { worker: Worker }).worker.terminate();
    await expect(pending).rejects.toMatchObject({ code: 'VALIDATE_CHECK_WORKER_FAILED', retryable: true });
    expect(await reasonOf()).toMatchObject({ outcome: 'valid', contract: 'orders' });
  }, 30_000);

  it('a request the worker refuses fails its batch, and the next request gets a new worker', async () => {
    const workerOf = () => (checks as unknown as { worker: Worker | undefined }).worker;
    let learned: LearnedSchema[] = [];
    checks = new WorkerChecks(settings, () => learned);
    await checks.check([raw(JSON.stringify(order(31)))], NOW);
    const first = workerOf();
    learned = [{ id: 1, contract: 'no-such-contract', schema: {} }];
    await expect(checks.check(corpus(), NOW)).rejects.toMatchObject({ code: 'VALIDATE_CHECK_WORKER_FAILED', retryable: true, details: { reason: expect.stringContaining('which is no contract') } });
    learned = [];
    expect((await checks.check([raw(JSON.stringify(order(30)))], NOW))[0]).toMatchObject({ ok: true, contract: 'orders' });
    expect(workerOf()).toBeDefined();
    expect(workerOf()).not.toBe(first);
  }, 30_000);

  it('refuses to check once closed', async () => {
    checks = new WorkerChecks(settings);
    await checks.close();
    await expect(checks.check(corpus(), NOW)).rejects.toMatchObject({ code: 'VALIDATE_CHECK_WORKER_FAILED' });
  });
});

describe('answerChecks (the worker thread\'s work)', () => {
  it('reports a check that threw by its message, and leaves empty and oversized values unread', () => {
    const seen: string[] = [];
    const contracts: ValidateContracts = {
      check: (value) => {
        seen.push(value.toString());
        if (value.toString() === 'boom') throw new Error('bug in a rule');
        return { ok: true, contract: 'orders', key: 'k', topic: 't', value: Buffer.from('out') };
      },
    };
    const values = [Buffer.from('fine'), Buffer.from('boom'), null, Buffer.alloc(0), Buffer.alloc(MAX_EVENT_BYTES + 1, 1)];
    const response = answerChecks(
      { id: 1, now: NOW, values: packBytes(values), headers: [packBytes(values.map(() => undefined)), packBytes(values.map(() => undefined))], receivedAt: new Float64Array(values.length).fill(Number.NaN), learned: [] },
      contracts,
      MAX_EVENT_BYTES,
    );
    expect([...response.status]).toEqual([CHECK_STATUS.ok, CHECK_STATUS.threw, CHECK_STATUS.skipped, CHECK_STATUS.skipped, CHECK_STATUS.skipped]);
    expect(response.threw).toEqual([{ index: 1, message: 'bug in a rule' }]);
    expect(seen).toEqual(['fine', 'boom']);
    // Routed on the main thread, the throw is the same VALIDATE_INTERNAL dead letter as inline.
    const message = raw('boom');
    const inline = routeRecord(message, contracts, options);
    const viaWorker = routedWith([message], [{ threw: 'bug in a rule' }])[0];
    expect(viaWorker).toEqual(inline);
    expect(inline).toMatchObject({ outcome: 'dlq', reason: 'VALIDATE_INTERNAL' });
  });
});
