import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { CONTRACTS, keyHashOf, placementOf } from '@sluice/contracts';
import { LakeQueryEngine, LocalStorage } from '@sluice/lake';
import { createTelemetry } from '@sluice/telemetry';
import { TableSet } from '../src/tables/table-set';
import type { BronzeRecord } from '../src/tier1/bronze-record';
import { LakeBronzeStore } from '../src/tier1/lake-bronze-store';
import { ContractFolder } from '../src/tier2/fold';

const orders = CONTRACTS.orders;
const TOPIC = 'valid.orders';
const T0 = Date.UTC(2026, 10, 29, 10, 0, 0);
const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });

// Bug guarded: a folder's tombstone memory holds the deletes it folded itself. With a second
// writer folding silver in turns (a second tier 2 by mistake, a zombie pod), each missed the
// other's deletes, and an older upsert resurrected an entity the other had deleted. A folder now
// rebuilds its memory when silver's fold offsets are not the ones it last committed.
describe('a second folder of the same silver', () => {
  let dir: string;
  let engine: LakeQueryEngine;
  beforeAll(async () => {
    dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `second-folder-${randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
    engine = await LakeQueryEngine.create();
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
    await telemetry.shutdown();
  });

  it("does not resurrect an entity the other folder deleted", async () => {
    const tables = new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: '' });
    const store = new LakeBronzeStore(tables, engine);
    let offset = -1;
    const append = async (version: number, op: 'upsert' | 'delete', atMs: number) => {
      const event = {
        event_id: `k-${version}-${op}`,
        event_time: T0 + atMs,
        producer: 'p',
        schema_version: 2,
        order_id: 'K',
        version,
        op,
        payload: op === 'delete' ? null : { customer_id: 'c', status: 'paid', total_cents: 1, currency: 'EUR', item_count: 1, coupon_code: null },
      };
      const place = placementOf(orders, event);
      offset += 1;
      const record: BronzeRecord = { topic: TOPIC, partition: 0, offset, contract: orders, event, eventId: event.event_id, eventTimeMs: event.event_time, eventDate: place.eventDate, bucket: place.bucket, keyHash: keyHashOf(place.key), writerVersion: 2, producedAtMs: event.event_time, bytes: 100 };
      await store.append(orders, [record], [{ tp: { topic: TOPIC, partition: 0 }, appId: `bronze:${TOPIC}-0`, expected: offset === 0 ? undefined : offset - 1, last: offset }]);
    };
    const folder = () => new ContractFolder({ contract: orders, topic: TOPIC, tables, engine, maxRows: 1000, foldPercent: 0, watermarkMs: 600_000, goldIntervalMs: 0, logger: telemetry.logger, metrics: telemetry.metrics });
    const [a, b] = [folder(), folder()];
    await append(1, 'upsert', 0);
    await b.silverStep(); // b's memory: built when nothing was deleted
    await append(3, 'delete', 120_000);
    await a.silverStep(); // a folds the delete
    await append(2, 'upsert', 60_000); // older than the delete, within the watermark
    await b.silverStep();
    const silver = await tables.existing(orders.tables.silver);
    const session = await engine.open({ t: await silver!.currentView() });
    try {
      expect(await session.queryJson('SELECT order_id, version FROM t')).toEqual([]);
    } finally {
      session.close();
    }
  });
});
