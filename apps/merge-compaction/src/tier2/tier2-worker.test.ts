import { CONTRACTS, type AnyContract, type GoldAggregate } from '@sluice/contracts';
import type { LakeQueryEngine } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import type { TableSet } from '../tables/table-set';
import { ContractFolder, type FoldOutcome } from './fold';
import { Tier2Worker } from './tier2-worker';

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
afterAll(() => telemetry.shutdown());
afterEach(() => jest.restoreAllMocks());

/** A worker over orders, inventory and clickstream (unless told otherwise) whose folders are stubbed by the test. */
function worker(
  tables = { existing: async () => undefined } as unknown as TableSet,
  foldPercent = 10,
  stallTimeoutMs = 60_000,
  contracts: AnyContract[] = [CONTRACTS.orders, CONTRACTS.inventory, CONTRACTS.clickstream],
): Tier2Worker {
  return new Tier2Worker({
    contracts: contracts.map((contract) => ({ contract, topic: `valid.${contract.name}` })),
    tables,
    engine: {} as LakeQueryEngine,
    intervalMs: 1000,
    maxRows: 1000,
    foldPercent,
    goldIntervalMs: 5000,
    watermarkMs: 60_000,
    retryMaxMs: 1000,
    stallTimeoutMs,
    maintenance: { intervalMs: 60_000, minSmallFiles: 8, smallFileBytes: 1, targetFileBytes: 2, retentionMs: 1, vacuum: false, logger: telemetry.logger, metrics: telemetry.metrics },
    logger: telemetry.logger,
    metrics: telemetry.metrics,
  });
}

const outcome = (silverRows: number, goldWindows: number, behind: boolean): FoldOutcome => ({ silverRows, goldWindows, behind });

describe('Tier2Worker.tick', () => {
  it("folds every contract's silver before any gold, so silver never waits for another contract's gold", async () => {
    const calls: string[] = [];
    // The folders themselves are tested against real tables (test/oracle.int.test.ts); here only the order.
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockImplementation(async function (this: ContractFolder) {
      calls.push(`silver ${contractOf(this)}`);
      return outcome(10, 0, false);
    });
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockImplementation(async function (this: ContractFolder) {
      calls.push(`gold ${contractOf(this)}`);
      return outcome(0, 2, contractOf(this) === 'clickstream');
    });
    const tier2 = worker();

    const behind = await tier2.tick();

    // One gold step per aggregate: inventory declares none.
    expect(calls).toEqual(['silver orders', 'silver inventory', 'silver clickstream', 'gold orders', 'gold clickstream']);
    expect(behind).toBe(true); // a gold step still behind keeps the worker going
    expect(tier2.stats).toEqual({ steps: 3, silverRows: 30, goldWindows: 4 });
  });

  it("a contract whose silver fails holds back no other contract's step nor maintenance; it retries after its own back-off", async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const calls: string[] = [];
    const broken = new Error('inventory silver failed');
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockImplementation(async function (this: ContractFolder) {
      calls.push(`silver ${contractOf(this)}`);
      if (contractOf(this) === 'inventory') throw broken;
      return outcome(10, 0, false);
    });
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockImplementation(async function (this: ContractFolder) {
      calls.push(`gold ${contractOf(this)}`);
      return outcome(0, 2, false);
    });
    const maintained = jest.spyOn(Tier2Worker.prototype as unknown as { maintain(): Promise<boolean> }, 'maintain').mockResolvedValue(true);
    const tier2 = worker();

    // The pass completes (no error for the job to back off on) and maintenance runs.
    await expect(tier2.tick()).resolves.toBe(false);
    expect(calls).toEqual(['silver orders', 'silver inventory', 'silver clickstream', 'gold orders', 'gold clickstream']);
    expect(tier2.stats).toEqual({ steps: 3, silverRows: 20, goldWindows: 4 });
    expect(maintained).toHaveBeenCalledTimes(1);

    // The next pass, within inventory's back-off (100 ms at most): everything but that step runs.
    calls.length = 0;
    now += 10;
    await tier2.tick();
    expect(calls).toEqual(['silver orders', 'silver clickstream', 'gold orders', 'gold clickstream']);

    // After its back-off it is tried again; failing for a minute makes the worker unhealthy.
    calls.length = 0;
    now += 1_000;
    await tier2.tick();
    expect(calls).toContain('silver inventory');
    expect(tier2.healthy).toBe(true);
    now += 60_000;
    await tier2.tick();
    expect(tier2.healthy).toBe(false);
  });

  it("a gold aggregate that fails holds back no other aggregate of its contract; it retries after its own back-off", async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    const [statusMinute] = CONTRACTS.orders.aggregates;
    const second: GoldAggregate = { ...statusMinute, name: 'status_minute_copy', table: 'gold_orders_status_minute_copy' };
    const orders: AnyContract = { ...CONTRACTS.orders, aggregates: [statusMinute, second] };
    const calls: string[] = [];
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockResolvedValue(outcome(0, 0, false));
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockImplementation(async (aggregate: GoldAggregate) => {
      calls.push(aggregate.name);
      if (aggregate === statusMinute) throw new Error('status_minute refused');
      return outcome(0, 3, false);
    });
    const tier2 = worker(undefined, 10, 60_000, [orders]);

    await expect(tier2.tick()).resolves.toBe(false);
    expect(calls).toEqual(['status_minute', 'status_minute_copy']);
    expect(tier2.stats.goldWindows).toBe(3);

    // Within the failed one's back-off only the other runs; after it, both.
    calls.length = 0;
    now += 10;
    await tier2.tick();
    expect(calls).toEqual(['status_minute_copy']);
    calls.length = 0;
    now += 1_000;
    await tier2.tick();
    expect(calls).toEqual(['status_minute', 'status_minute_copy']);
    expect(tier2.stats.goldWindows).toBe(9);
  });

  // A maintenance round that failed as it started waited a whole compaction interval before its
  // next try, and readiness counted the failure all that time.
  it('tries a failed maintenance round again after its back-off, and is healthy again once it succeeds', async () => {
    let now = 1_000_000;
    jest.spyOn(Date, 'now').mockImplementation(() => now);
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockResolvedValue(outcome(0, 0, false));
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockResolvedValue(outcome(0, 0, false));
    let fail = true;
    const maintain = jest.spyOn(Tier2Worker.prototype as unknown as { maintain(starting: boolean): Promise<boolean> }, 'maintain').mockImplementation(async () => {
      if (fail) throw new Error('storage unavailable');
      return true;
    });
    const tier2 = worker();
    await tier2.tick();
    expect(maintain).toHaveBeenCalledTimes(1);
    fail = false;
    now += 2_000; // past the back-off (≤ 100 ms), well inside the 60 s maintenance interval
    await tier2.tick();
    expect(maintain).toHaveBeenCalledTimes(2);
    expect(maintain.mock.calls[1][0]).toBe(true); // the round starts again from its start
    expect(tier2.healthy).toBe(true);
  });
});

describe('Tier2Worker.live', () => {
  // A tier-2-only pod (the folder) had no other liveness: a fold hung on a storage or DuckDB call
  // held silver and gold where they were with /healthz green.
  it('turns false while a pass runs past the stall timeout, and true again once passes return', async () => {
    let release!: () => void;
    let calls = 0;
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockImplementation(async () => {
      if (++calls === 1) await new Promise<void>((resolve) => (release = resolve)); // the first step hangs
      return outcome(0, 0, false);
    });
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockResolvedValue(outcome(0, 0, false));
    const tier2 = worker(undefined, 10, 200);
    tier2.start();
    try {
      expect(tier2.live).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(tier2.live).toBe(false);
      expect(tier2.passRunningMs).toBeGreaterThanOrEqual(200);
      release();
      // The pass ends (the other steps are stubs): between passes nothing runs.
      for (const deadline = Date.now() + 5000; tier2.passRunningMs !== 0 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(tier2.live).toBe(true);
      expect(tier2.passRunningMs).toBe(0);
    } finally {
      release?.();
      await tier2.stop();
    }
  });
});

describe('Tier2Worker maintenance', () => {
  // With SLUICE_SILVER_FOLD_PERCENT=0 the round skipped silver's tail: one left from before stayed
  // pending for readers outside Sluice on a silver that got no more events.
  it.each([
    [10, { foldAll: true }],
    [0, undefined],
  ])('at fold percent %s, starts a round with a merge that folds any silver tail (amortise %j)', async (foldPercent, amortise) => {
    const merges: Array<{ amortise?: unknown }> = [];
    const silver = { name: 'silver', merge: async (spec: { amortise?: unknown }) => (merges.push(spec), { foldedPartitions: 0 }) };
    const tables = { existing: async (name: string) => (name === CONTRACTS.orders.tables.silver ? silver : undefined) } as unknown as TableSet;
    jest.spyOn(ContractFolder.prototype, 'silverStep').mockResolvedValue(outcome(0, 0, false));
    jest.spyOn(ContractFolder.prototype, 'goldStep').mockResolvedValue(outcome(0, 0, false));
    const maintained = jest.spyOn(Tier2Worker.prototype as unknown as { maintain(starting: boolean, deadline: number): Promise<boolean> }, 'maintain');
    const tier2 = worker(tables, foldPercent);
    await tier2.tick();
    expect(maintained).toHaveBeenCalledTimes(1);
    expect(merges).toHaveLength(1);
    expect(merges[0].amortise).toEqual(amortise);
  });
});

/** The contract a folder folds (its options are private; the test reads them by name). */
function contractOf(folder: ContractFolder): string {
  return (folder as unknown as { o: { contract: { name: string } } }).o.contract.name;
}
