import { CONTRACTS } from '@sluice/contracts';
import type { LakeTable } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import type { TableSet } from '../tables/table-set';
import { CompactionWorker } from './compaction-worker';
import { maintainTable } from './maintenance';

// The tables' maintenance is tested against real tables (maintenance.test.ts, the integration
// suites); here only how the worker's liveness follows a pass.
jest.mock('./maintenance', () => ({ ...jest.requireActual('./maintenance'), maintainTable: jest.fn() }));
const maintain = maintainTable as jest.MockedFunction<typeof maintainTable>;

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
afterAll(() => telemetry.shutdown());
afterEach(() => maintain.mockReset());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (condition: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
};
const done = { partitionsCompacted: 1, filesRemoved: 2, conflicts: 0, filesVacuumed: 0, unfinished: false };

function worker(stallTimeoutMs: number): CompactionWorker {
  const tables = { existing: async (name: string) => (name === CONTRACTS.orders.tables.bronze ? ({ name } as unknown as LakeTable) : undefined) } as unknown as TableSet;
  return new CompactionWorker({
    contracts: [CONTRACTS.orders],
    tables,
    intervalMs: 60_000,
    retryMaxMs: 1000,
    stallTimeoutMs,
    maintenance: { minSmallFiles: 8, smallFileBytes: 1, targetFileBytes: 2, retentionMs: 1, vacuum: false, logger: telemetry.logger, metrics: telemetry.metrics },
    vacuumDerived: true,
    vacuumIntervalMs: 0,
    logger: telemetry.logger,
  });
}

describe('CompactionWorker.live', () => {
  // A pass over a backlog of many partitions may take longer than the stall timeout: each
  // partition compacted is progress. A pass stuck in one call is not.
  it('stays live through a long pass that compacts partition after partition, and turns false when a call stops returning', async () => {
    let release!: () => void;
    maintain.mockImplementationOnce(async (_table, options) => {
      for (let i = 0; i < 30; i++) {
        await sleep(50); // each partition far inside the 1 s timeout; the pass takes 1.5 s
        options.onProgress?.();
      }
      await new Promise<void>((resolve) => (release = resolve)); // then a call hangs
      return done;
    });
    const w = worker(1000);
    w.start();
    try {
      for (let i = 0; i < 12; i++) {
        await sleep(100);
        expect({ at: i, live: w.live }).toEqual({ at: i, live: true });
      }
      await until(() => !w.live, 5000);
      release();
      await until(() => w.live, 5000);
    } finally {
      // A failed expectation must not leave the pass hanging (stop waits for it).
      while (release === undefined) await sleep(20);
      release();
      await w.stop();
    }
  });
});

describe('CompactionWorker vacuum cadence', () => {
  // Vacuum ran on every pass (once a minute), listing every data file of every table against a
  // retention of days.
  it('vacuums a table at most once per interval, counting a vacuum that ran before a partition failed', async () => {
    const asked: string[] = [];
    let failAfterVacuum = false;
    maintain.mockImplementation(async (table, options) => {
      if (options.vacuum) {
        asked.push(table.name);
        options.onVacuumed?.();
      }
      if (failAfterVacuum) throw new Error('a partition failed');
      return done;
    });
    let now = 0;
    const names = [CONTRACTS.orders.tables.bronze, CONTRACTS.orders.tables.silver];
    const tables = { existing: async (name: string) => (names.includes(name) ? ({ name } as unknown as LakeTable) : undefined) } as unknown as TableSet;
    const w = new CompactionWorker({
      contracts: [CONTRACTS.orders],
      tables,
      intervalMs: 60_000,
      retryMaxMs: 1000,
      stallTimeoutMs: 60_000,
      maintenance: { minSmallFiles: 8, smallFileBytes: 1, targetFileBytes: 2, retentionMs: 1, vacuum: true, logger: telemetry.logger, metrics: telemetry.metrics },
      vacuumDerived: true,
      vacuumIntervalMs: 3_600_000,
      logger: telemetry.logger,
      now: () => now,
    });
    const pass = async (at: number) => {
      now = at;
      asked.length = 0;
      await w.tick().catch(() => undefined);
      return [...asked];
    };
    expect(await pass(0)).toEqual(names); // the first pass vacuums
    expect(await pass(60_000)).toEqual([]);
    failAfterVacuum = true; // bronze's partition fails after its vacuum: that vacuum counts
    expect(await pass(3_600_000)).toEqual(names);
    expect(await pass(3_660_000)).toEqual([]);
    expect(maintain.mock.calls.filter(([t]) => t.name === CONTRACTS.orders.tables.silver)).toHaveLength(2); // silver is opened only to be vacuumed
  });
});
