import { CONTRACTS, type AnyContract, type GoldAggregate } from '@sluice/contracts';
import type { LakeQueryEngine } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import type { TableSet } from '../tables/table-set';
import { ContractFolder } from './fold';

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
afterAll(() => telemetry.shutdown());
afterEach(() => jest.restoreAllMocks());

// The folds themselves run against real tables (test/oracle.int.test.ts, test/gold-increments.int.test.ts);
// here only when a gold step runs, per aggregate.
describe('ContractFolder.goldStep', () => {
  const [statusMinute] = CONTRACTS.orders.aggregates;
  const copy: GoldAggregate = { ...statusMinute, name: 'status_minute_copy', table: 'gold_orders_status_minute_copy' };
  const orders: AnyContract = { ...CONTRACTS.orders, aggregates: [statusMinute, copy] };

  it('keeps each aggregate to its own interval, and tries a failed one again without waiting out the interval', async () => {
    let now = 1_000_000;
    const folder = new ContractFolder({
      contract: orders,
      topic: 'valid.orders',
      tables: { name: (table: string) => table } as unknown as TableSet,
      engine: {} as LakeQueryEngine,
      maxRows: 1000,
      foldPercent: 10,
      goldIntervalMs: 5000,
      watermarkMs: 60_000,
      logger: telemetry.logger,
      metrics: telemetry.metrics,
      now: () => now,
    });
    // Bronze holds offsets 0..5 of partition 0.
    const view = { table: {}, snapshot: {}, written: new Map([[0, 5]]) };
    jest.spyOn(ContractFolder.prototype as unknown as { bronzeView(): Promise<unknown> }, 'bronzeView').mockResolvedValue(view);
    const folded: string[] = [];
    let failing = true;
    jest
      .spyOn(ContractFolder.prototype as unknown as { foldGold(b: unknown, s: unknown, a: GoldAggregate): Promise<unknown> }, 'foldGold')
      .mockImplementation(async (_b, _s, aggregate) => {
        folded.push(aggregate.name);
        if (aggregate === statusMinute && failing) throw new Error('refused');
        return { windows: 1, behind: false, left: 0 };
      });

    await expect(folder.goldStep(statusMinute)).rejects.toThrow('refused');
    await expect(folder.goldStep(copy)).resolves.toMatchObject({ goldWindows: 1 });
    // 200 ms on (a back-off, not the 5 s interval): the failed aggregate runs again, the other waits.
    now += 200;
    await expect(folder.goldStep(statusMinute)).rejects.toThrow('refused');
    await expect(folder.goldStep(copy)).resolves.toMatchObject({ goldWindows: 0 });
    failing = false;
    now += 200;
    await expect(folder.goldStep(statusMinute)).resolves.toMatchObject({ goldWindows: 1 });
    // Once it succeeded, it waits out its interval too.
    now += 200;
    await expect(folder.goldStep(statusMinute)).resolves.toMatchObject({ goldWindows: 0 });
    expect(folded).toEqual(['status_minute', 'status_minute_copy', 'status_minute', 'status_minute']);
    now += 5000;
    await folder.goldStep(statusMinute);
    await folder.goldStep(copy);
    expect(folded.slice(4)).toEqual(['status_minute', 'status_minute_copy']);
  });
});
