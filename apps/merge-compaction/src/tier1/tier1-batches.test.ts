import { CONTRACTS, encodeSingleObject } from '@sluice/contracts';
import type { ConsumedMessage, OnAssign } from '@sluice/kafka';
import { createTelemetry, type Telemetry } from '@sluice/telemetry';
import type { BronzeRecord } from './bronze-record';
import type { BronzeStore, PartitionCommit } from './bronze-store';
import { tier1TestOptions } from './tier1-test-options';
import { Tier1Worker, type Tier1Consumer } from './tier1-worker';

// Records keep arriving while a batch is being written. They used to join the next batch
// whatever its size, so under a backlog one commit took everything buffered (300k rows against a
// bound of 100k in the tier-1 bench), and DuckDB staged all of it at once.
describe('Tier1Worker batches stay within their bounds under a backlog', () => {
  const orders = CONTRACTS.orders;
  const topic = 'test.orders.valid';
  const tp = { topic, partition: 0 };
  let telemetry: Telemetry;
  let worker: Tier1Worker | undefined;

  beforeAll(() => {
    telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
  });
  afterAll(() => telemetry.shutdown());
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });

  const message = (offset: number): ConsumedMessage => {
    const value = encodeSingleObject(orders.versions[0].schema, {
      event_id: `e-${offset}`,
      event_time: Date.UTC(2026, 10, 30, 12, 0, offset),
      producer: 'p',
      schema_version: 1,
      version: 1,
      op: 'upsert',
      order_id: `o-${offset}`,
      payload: { customer_id: 'c', status: 'created', total_cents: offset, currency: 'EUR', item_count: 1 },
    });
    return { topic, partition: 0, offset, key: null, value, headers: {}, size: value.length };
  };
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => message(from + i));
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
    if (!ok()) throw new Error(`timed out waiting for ${what}`);
  };

  it('writes what piled up during a slow append as several bounded batches, in offset order, each chained on the last', async () => {
    const appends: Array<{ offsets: number[]; partitions: PartitionCommit[]; done(): void }> = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: (_contract, records: readonly BronzeRecord[], partitions) =>
        new Promise((resolve) => appends.push({ offsets: records.map((r) => r.offset), partitions: [...partitions], done: () => resolve({ version: appends.length }) })),
    };
    // First poll: 0..9 (one full batch). While that append is held, 35 more arrive.
    let polls = 0;
    const consumer = ({ onAssign }: { onAssign: OnAssign }): Tier1Consumer => ({
      connect: async () => undefined,
      poll: async () => {
        polls++;
        if (polls === 1) {
          await onAssign([tp]);
          return range(0, 10);
        }
        await new Promise((r) => setTimeout(r, 5));
        return polls === 2 ? range(10, 45) : [];
      },
      pause: () => undefined,
      resume: () => undefined,
      paused: () => [],
      assignment: () => [tp],
      seek: async () => undefined,
      close: async () => undefined,
    });
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 50, maxBytes: 1 << 20, maxRecords: 10 } } }));
    await worker.start();
    await until('the first append', () => appends.length === 1 && polls >= 3);
    for (let i = 0; i < 5; i++) {
      await until(`append ${i + 1}`, () => appends.length === i + 1);
      appends[i].done();
    }
    await until('every record written', () => worker!.stats.written === 45);
    expect(appends.map((a) => a.offsets)).toEqual([0, 10, 20, 30, 40].map((from) => range(from, Math.min(from + 10, 45)).map((m) => m.offset)));
    expect(appends.map((a) => a.partitions.map((p) => [p.expected, p.last]))).toEqual([[[undefined, 9]], [[9, 19]], [[19, 29]], [[29, 39]], [[39, 44]]]);
  });
});
