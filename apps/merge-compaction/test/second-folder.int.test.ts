import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { CONTRACTS, keyHashOf, placementOf } from '@sluice/contracts';
import { LakeQueryEngine, LakeTable, LocalStorage } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import { TableSet } from '../src/tables/table-set';
import type { BronzeRecord } from '../src/tier1/bronze-record';
import { LakeBronzeStore } from '../src/tier1/lake-bronze-store';
import { ContractFolder } from '../src/tier2/fold';

const orders = CONTRACTS.orders;
const TOPIC = 'valid.orders';
const T0 = Date.UTC(2026, 9, 1, 10, 0, 0);
const DAY = 86_400_000;
const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });

/** Bronze and silver of orders in a fresh directory, written through tier 1's store, folded by folders made here. */
async function lake(dir: string, engine: LakeQueryEngine) {
  const tables = new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: '' });
  const store = new LakeBronzeStore(tables, engine);
  const offsets = new Map<number, number>();
  return {
    /** One bronze commit of one event of `key` in Kafka partition `partition`. */
    async append(partition: number, key: string, version: number, op: 'upsert' | 'delete', atMs: number) {
      const event = {
        event_id: `${key}-${version}-${op}`,
        event_time: T0 + atMs,
        producer: 'p',
        schema_version: 2,
        order_id: key,
        version,
        op,
        payload: op === 'delete' ? null : { customer_id: 'c', status: 'paid', total_cents: 1, currency: 'EUR', item_count: 1, coupon_code: null },
      };
      const place = placementOf(orders, event);
      const last = offsets.get(partition);
      const offset = (last ?? -1) + 1;
      offsets.set(partition, offset);
      const record: BronzeRecord = { topic: TOPIC, partition, offset, contract: orders, event, eventId: event.event_id, eventTimeMs: event.event_time, eventDate: place.eventDate, bucket: place.bucket, keyHash: keyHashOf(place.key), writerVersion: 2, producedAtMs: event.event_time, bytes: 100 };
      await store.append(orders, [record], [{ tp: { topic: TOPIC, partition }, appId: `bronze:${TOPIC}-${partition}`, expected: last, last: offset }]);
    },
    folder: (maxReadBytes?: number) =>
      new ContractFolder({ contract: orders, topic: TOPIC, tables, engine, maxRows: 1000, foldPercent: 0, watermarkMs: 10 * 60_000, maxReadBytes, goldIntervalMs: 0, logger: telemetry.logger, metrics: telemetry.metrics }),
    async silver(): Promise<Record<string, unknown>[]> {
      const silver = await tables.existing(orders.tables.silver);
      const session = await engine.open({ t: await silver!.currentView() });
      try {
        return await session.queryJson('SELECT order_id, version FROM t ORDER BY order_id');
      } finally {
        session.close();
      }
    },
  };
}

/** The SQL of every bronze read a folder makes from now on. */
function bronzeReads(folder: ContractFolder): string[] {
  const queries: string[] = [];
  const f = folder as unknown as { queryBronze: (...args: unknown[]) => Promise<unknown> };
  const original = f.queryBronze.bind(folder);
  f.queryBronze = (...args: unknown[]) => {
    queries.push(String(args[3]));
    return original(...args);
  };
  return queries;
}

/** Runs `step` as the earlier release made fold steps: its silver commits carry no fold-time txns. */
async function olderRelease(step: () => Promise<unknown>): Promise<void> {
  const merge = LakeTable.prototype.merge;
  const spy = jest.spyOn(LakeTable.prototype, 'merge').mockImplementation(function (this: LakeTable, spec) {
    return merge.call(this, { ...spec, txns: spec.txns?.filter((t) => !t.appId.startsWith('fold-time')) });
  });
  try {
    await step();
  } finally {
    spy.mockRestore();
  }
}

describe('tier 2 tombstone memory against real tables', () => {
  let dir: string;
  let engine: LakeQueryEngine;
  beforeAll(async () => {
    dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `tombstone-memory-${randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
    engine = await LakeQueryEngine.create();
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
    await telemetry.shutdown();
  });

  // Bug guarded: a folder's memory holds the deletes it folded itself. With a second writer folding
  // silver in turns (a second tier 2 by mistake, a zombie pod), each missed the other's deletes,
  // and an older upsert resurrected an entity the other had deleted.
  it('a second folder of the same silver does not resurrect an entity the other deleted', async () => {
    const l = await lake(path.join(dir, 'second'), engine);
    const [a, b] = [l.folder(), l.folder()];
    await l.append(0, 'K', 1, 'upsert', 0);
    await b.silverStep(); // b's memory: built when nothing was deleted
    await l.append(0, 'K', 3, 'delete', 120_000);
    await a.silverStep(); // a folds the delete
    await l.append(0, 'K', 2, 'upsert', 60_000); // older than the delete, within the watermark
    await b.silverStep();
    expect(await l.silver()).toEqual([]);
  });

  // The rebuild walked bronze newest first until every partition's window was passed: one
  // partition weeks behind the others made it read the whole history in between, on every start.
  it("a restart reads each partition's window of bronze, not the history between them, and keeps both partitions' deletes", async () => {
    const l = await lake(path.join(dir, 'windows'), engine);
    // Partition 1 is 59 days behind: its entity L was deleted on day 0.
    await l.append(1, 'L', 1, 'upsert', 0);
    await l.append(1, 'L', 3, 'delete', 60_000);
    for (let d = 0; d < 60; d++) await l.append(0, `J${d}`, 1, 'upsert', d * DAY); // one file per day
    await l.append(0, 'K', 1, 'upsert', 59 * DAY);
    await l.append(0, 'K', 3, 'delete', 59 * DAY + 60_000);
    await l.folder().silverStep();
    // A new process, every file its own chunk: count the deletes' reads.
    const restarted = l.folder(1);
    const queries = bronzeReads(restarted);
    await l.append(1, 'L', 2, 'upsert', 30_000); // older versions, each within its partition's watermark
    await l.append(0, 'K', 2, 'upsert', 59 * DAY + 30_000);
    await restarted.silverStep();
    expect(await l.silver()).toEqual(Array.from({ length: 60 }, (_, d) => ({ order_id: `J${d}`, version: '1' })).sort((x, y) => (x.order_id < y.order_id ? -1 : 1)));
    // Day 0 and day 59 (with the files next to them at most), not the 58 days between.
    expect(queries.filter((q) => q.includes("op = 'delete'")).length).toBeLessThanOrEqual(6);
  });

  // A writer that records no fold times (the release before them: an upgrade, or an old pod still
  // folding) moves `fold:` past the recorded time; trusting that time, the rebuild skipped the
  // files of the newer deletes and an older upsert resurrected the entity.
  it.each([
    ['after an upgrade from a release that recorded no fold times', true],
    ['after an older release folded in between', false],
  ])('does not trust a fold time %s', async (_label, upgrade) => {
    const l = await lake(path.join(dir, `legacy-${upgrade}`), engine);
    const MIN = 60_000;
    const olderReleaseStep = () => olderRelease(() => l.folder().silverStep());
    await l.append(0, 'J', 1, 'upsert', 0);
    await l.append(0, 'K', 1, 'upsert', 50 * MIN);
    if (upgrade) {
      // The earlier release folds everything; the new one's first step carries only a late event.
      await l.append(0, 'K', 3, 'delete', 101 * MIN);
      await olderReleaseStep();
      await l.append(0, 'L', 1, 'upsert', 10 * MIN);
      await l.folder().silverStep();
    } else {
      await l.folder().silverStep();
      await l.append(0, 'K', 3, 'delete', 101 * MIN);
      await olderReleaseStep();
    }
    // A restart (a new process), then an older version of K, within the watermark of its delete.
    const restarted = l.folder();
    await l.append(0, 'K', 2, 'upsert', 95 * MIN);
    await restarted.silverStep();
    expect((await l.silver()).filter((r) => r.order_id === 'K')).toEqual([]);
  });

  // All or nothing, one partition without a trusted time (last folded by an earlier release, then
  // idle) made every restart read the whole history of every partition.
  it('a partition without a trusted fold time gets one at the next step, and a restart then reads only the windows', async () => {
    const l = await lake(path.join(dir, 'per-partition'), engine);
    await l.append(1, 'L', 1, 'upsert', 0);
    await l.append(1, 'L', 3, 'delete', 60_000);
    await olderRelease(() => l.folder().silverStep()); // an earlier release folds partition 1, which then stays idle
    for (let d = 0; d < 40; d++) await l.append(0, `J${d}`, 1, 'upsert', d * DAY);
    await l.folder().silverStep();
    const restarted = l.folder(1);
    const queries = bronzeReads(restarted);
    await l.append(1, 'L', 2, 'upsert', 30_000); // older than L's delete: must stay deleted
    await restarted.silverStep();
    expect((await l.silver()).filter((r) => r.order_id === 'L')).toEqual([]);
    // Day 0 and day 39 and the step's own reads, not the 40 days of partition 0 in between.
    expect(queries.length).toBeLessThanOrEqual(8);
  });
});
