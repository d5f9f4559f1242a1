import type { ConsumedMessage, OnAssign, PartitionRef } from '@sluice/kafka';
import { createTelemetry, type Telemetry } from '@sluice/telemetry';
import type { BronzeStore } from './bronze-store';
import { orderMessages, tier1TestOptions, until } from './tier1-test-options';
import { Tier1Worker, type Tier1Consumer } from './tier1-worker';

// A poll that never returns (a native consumer call, or a rebalance hook waiting on storage)
// used to leave merge-compaction live and ready while it consumed nothing.
describe('Tier1Worker liveness (bug: a hung poll kept /healthz green)', () => {
  const topic = 'test.orders.valid';
  let telemetry: Telemetry;
  let t: number;
  let worker: Tier1Worker | undefined;
  // The hung calls, answered at the end so stop() can finish.
  let releases: Array<() => void> = [];
  const hang = <T>(value: T): Promise<T> => new Promise<T>((resolve) => releases.push(() => resolve(value)));

  beforeAll(() => {
    telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
  });
  afterAll(() => telemetry.shutdown());
  beforeEach(() => (t = 0));
  afterEach(async () => {
    const stopped = worker?.stop();
    for (const release of releases) release();
    releases = [];
    await stopped;
    worker = undefined;
  });

  // Start-up reads every bronze table (no partitions) before joining the group; that read answers.
  const readable: Partial<BronzeStore> = { writtenOffsets: async () => new Map() };

  function start(poll: (hooks: { onAssign: OnAssign }) => Promise<ConsumedMessage[]>, store: Partial<BronzeStore> = readable): Promise<void> {
    const consumer = (hooks: { onAssign: OnAssign }): Tier1Consumer => ({
      connect: async () => undefined,
      poll: () => poll(hooks),
      pause: () => undefined,
      resume: () => undefined,
      paused: () => [],
      lag: () => [],
      assignment: () => [],
      seek: async () => undefined,
      commit: async () => undefined,
      close: async () => undefined,
    });
    const overrides = { stallTimeoutMs: 30_000, now: () => t, bounds: { maxMs: 100, maxBytes: 1 << 20, maxRecords: 3 } };
    worker = new Tier1Worker(tier1TestOptions({ topic, telemetry, store, createConsumer: consumer, overrides }));
    return worker.start();
  }

  it('stays live while a poll runs within the limit and turns not-live past it, naming the step', async () => {
    await start(() => hang<[]>([]));
    await new Promise((r) => setImmediate(r));
    t = 30_000;
    expect(worker?.live).toBe(true);
    t = 30_001;
    expect(worker?.live).toBe(false);
    expect(worker?.running()).toEqual({ step: 'poll', forMs: 30_001 });
  });

  it('names the rebalance hook a poll hung in', async () => {
    const partition: PartitionRef = { topic, partition: 3 };
    // The hook reads the bronze offsets, and that read never answers.
    await start(
      async ({ onAssign }) => {
        await onAssign([partition]);
        return [];
      },
      { writtenOffsets: async (_contract, appIds) => (appIds.length === 0 ? new Map() : hang(new Map())), recentEventIds: async () => ({ ids: [], truncated: false }) },
    );
    await new Promise((r) => setImmediate(r));
    t = 45_000;
    expect(worker?.live).toBe(false);
    expect(worker?.running()).toEqual({ step: 'poll: assign orders: read bronze offsets', forMs: 45_000 });
  });

  // The write runs beside the polls: one that never returned left the loop polling (paused by
  // backpressure once the buffer filled), live and ready, with nothing reaching bronze.
  it('turns not-live when a step of a bronze write hangs past the limit, naming it', async () => {
    const partition: PartitionRef = { topic, partition: 0 };
    let polls = 0;
    let appends = 0;
    await start(
      async ({ onAssign }) => {
        polls += 1;
        if (polls === 1) await onAssign([partition]);
        else await new Promise((r) => setTimeout(r, 5));
        return polls === 1 ? orderMessages(topic, 0, 3) : [];
      },
      {
        writtenOffsets: async () => new Map(),
        recentEventIds: async () => ({ ids: [], truncated: false }),
        append: () => {
          appends += 1;
          return hang({ version: 1 });
        },
      },
    );
    await until('the append', () => appends === 1 && polls >= 3);
    // The polls go on (each one's clock starts anew): only the write is hung.
    t = 30_000;
    const before = polls;
    await until('two more polls', () => polls >= before + 2);
    expect(worker?.live).toBe(true);
    t = 30_001;
    expect(worker?.live).toBe(false);
    expect(worker?.running()).toEqual({ step: 'write: orders: bronze append', forMs: 30_001 });
  });
});
