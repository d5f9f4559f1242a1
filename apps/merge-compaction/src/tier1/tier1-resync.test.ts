import { CONTRACTS, encodeSingleObject } from '@sluice/contracts';
import type { ConsumedMessage, OnAssign, TopicPartitionOffset } from '@sluice/kafka';
import { createTelemetry, type Telemetry } from '@sluice/telemetry';
import { mergeError } from '../errors';
import type { BronzeRecord } from './bronze-record';
import type { BronzeStore, PartitionCommit } from './bronze-store';
import { tier1TestOptions } from './tier1-test-options';
import { Tier1Worker, type Tier1Consumer } from './tier1-worker';

// Another worker moved a partition's offsets while this one held a batch of it (a rebalance):
// the write fails MERGE_OFFSETS_MOVED, the batch is dropped and the partition re-read from the
// table's offset. Records fetched from the old position in the meantime must not be accepted,
// or the re-read ones are skipped as re-deliveries and never reach bronze (seen as a CI run
// whose rebalance test ended 10 events short).
describe('Tier1Worker after MERGE_OFFSETS_MOVED', () => {
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
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  const until = async (what: string, ok: () => boolean) => {
    for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
    if (!ok()) throw new Error(`timed out waiting for ${what}`);
  };

  it.each([
    ['the seek succeeds at once', 0],
    ['the first seek fails (erroneous state)', 1],
  ])('drops records fetched from the old position until the seek to the table offset is done (%s)', async (_label, seekFailures) => {
    // The partition's offset in the bronze table (undefined: never written).
    const table: { offset?: number } = {};
    const appends: Array<{ offsets: number[]; partitions: PartitionCommit[]; settle: { resolve(v: { version: number }): void; reject(e: unknown): void } }> = [];
    const store: Partial<BronzeStore> = {
      writtenOffsets: async () => new Map(table.offset === undefined ? [] : [[`bronze:${topic}-0`, table.offset]]),
      recentEventIds: async () => ({ ids: [], truncated: false }),
      committedEventIds: async () => new Set<string>(),
      append: (_contract, records: readonly BronzeRecord[], partitions) =>
        new Promise((resolve, reject) => appends.push({ offsets: records.map((r) => r.offset), partitions: [...partitions], settle: { resolve, reject } })),
    };
    // The consumer: the first poll assigns the partition and returns offsets 0..9; the second is
    // held open by the test; later polls read from the last seek, like Kafka after a seek.
    const seeks: TopicPartitionOffset[] = [];
    let failSeeks = seekFailures;
    let position = 10;
    let held: ((m: ConsumedMessage[]) => void) | undefined;
    let polls = 0;
    const consumer = ({ onAssign }: { onAssign: OnAssign }): Tier1Consumer => ({
      connect: async () => undefined,
      poll: async () => {
        polls++;
        if (polls === 1) {
          await onAssign([tp]);
          return range(0, 10);
        }
        if (polls === 2) return new Promise<ConsumedMessage[]>((resolve) => (held = resolve));
        await new Promise((r) => setTimeout(r, 5));
        const out = range(position, 15);
        position = 15;
        return out;
      },
      pause: () => undefined,
      resume: () => undefined,
      paused: () => [],
      assignment: () => [tp],
      seek: async (s) => {
        if (failSeeks-- > 0) throw new Error('Local: Erroneous state');
        seeks.push(s);
        position = s.offset;
      },
      close: async () => undefined,
    });
    worker = new Tier1Worker(
      tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides: { bounds: { maxMs: 200, maxBytes: 1 << 20, maxRecords: 10 } } }),
    );
    await worker.start();

    // Batch 0..9 is being written while the second poll is out.
    await until('the first append', () => appends.length === 1 && held !== undefined);
    expect(appends[0].offsets).toEqual(range(0, 10).map((m) => m.offset));
    // Meanwhile another worker wrote 0..4 of this partition: the write is refused.
    table.offset = 4;
    appends[0].settle.reject(mergeError('MERGE_OFFSETS_MOVED', 'moved', { details: {} }));
    await settle();
    // The poll that was out returns what the consumer had fetched from the old position.
    held!(range(10, 15));
    await until('the second append', () => appends.length === 2);
    expect(seeks).toEqual([{ topic, partition: 0, offset: 5 }]);
    // 5..14 are written, after the table's 4; with 10..14 accepted early, 5..9 would be missing.
    expect(appends[1].offsets).toEqual(range(5, 15).map((m) => m.offset));
    expect(appends[1].partitions).toMatchObject([{ appId: `bronze:${topic}-0`, expected: 4, last: 14 }]);
    appends[1].settle.resolve({ version: 2 });
    await until('the write to finish', () => worker!.stats.written === 10);
  });
});
