import { CONTRACTS } from '@sluice/contracts';
import type { LakeTable } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import type { TableSet } from '../tables/table-set';
import { CompactionWorker } from './compaction-worker';
import { maintainTable } from './maintenance';

// The tables' maintenance is tested against real tables (maintenance.test.ts, the integration
// suites); here only how a pass is cut into slices.
jest.mock('./maintenance', () => ({ ...jest.requireActual('./maintenance'), maintainTable: jest.fn() }));
const maintain = maintainTable as jest.MockedFunction<typeof maintainTable>;

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
afterAll(() => telemetry.shutdown());
afterEach(() => maintain.mockReset());

const contracts = [CONTRACTS.orders, CONTRACTS.inventory, CONTRACTS.clickstream];

function worker(): CompactionWorker {
  const tables = { existing: async (name: string) => ({ name }) as unknown as LakeTable } as unknown as TableSet;
  return new CompactionWorker({
    contracts,
    tables,
    intervalMs: 60_000,
    retryMaxMs: 1000,
    stallTimeoutMs: 60_000,
    maintenance: { minSmallFiles: 8, smallFileBytes: 1, targetFileBytes: 2, retentionMs: 1, vacuum: true, logger: telemetry.logger, metrics: telemetry.metrics },
    vacuumDerived: true,
    logger: telemetry.logger,
  });
}

describe('CompactionWorker.tick', () => {
  // A pass over a large backlog ran past the liveness bound on passes and the process was ended
  // before it finished; each slice now stops between partitions and the next goes on at once.
  it('stops a pass at its deadline and resumes at the contract it stopped at', async () => {
    const calls: string[] = [];
    let cutInventory = true;
    maintain.mockImplementation(async (table, _options, _sortBy, deadline) => {
      calls.push(`${table.name}${deadline === undefined ? '' : ' (deadline)'}`);
      const unfinished = table.name === CONTRACTS.inventory.tables.bronze && cutInventory;
      if (unfinished) cutInventory = false;
      return { partitionsCompacted: 1, filesRemoved: 2, conflicts: 0, filesVacuumed: 0, unfinished };
    });
    const w = worker();
    expect(await w.tick(1000)).toBe(true); // more to do: the next slice runs at once
    expect(calls).toEqual([
      `${CONTRACTS.orders.tables.bronze} (deadline)`,
      CONTRACTS.orders.tables.silver,
      ...CONTRACTS.orders.aggregates.map((a) => a.table),
      `${CONTRACTS.inventory.tables.bronze} (deadline)`,
    ]);
    expect(w.stats.passes).toBe(0);
    calls.length = 0;
    expect(await w.tick(1000)).toBe(false);
    expect(calls[0]).toBe(`${CONTRACTS.inventory.tables.bronze} (deadline)`); // where the last slice stopped
    expect(calls).toContain(`${CONTRACTS.clickstream.tables.bronze} (deadline)`);
    expect(calls).toContain(`${CONTRACTS.orders.tables.bronze} (deadline)`);
    expect(w.stats.passes).toBe(1);
  });
});
