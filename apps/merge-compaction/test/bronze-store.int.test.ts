import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { AvroDecoder, CONTRACTS, encodeSingleObject } from '@sluice/contracts';
import { LakeQueryEngine, LocalStorage } from '@sluice/lake';
import { TableSet } from '../src/tables/table-set';
import { decodeRecord, type BronzeRecord } from '../src/tier1/bronze-record';
import { LakeBronzeStore } from '../src/tier1/lake-bronze-store';

const orders = CONTRACTS.orders;
const decoder = new AvroDecoder([orders]);

function record(offset: number, partition = 0, eventId = `e-${offset}-${randomUUID()}`, eventTime = Date.UTC(2026, 10, 29, 12, 0, 0) + offset): BronzeRecord {
  const event = {
    event_id: eventId,
    event_time: eventTime,
    producer: 'p',
    schema_version: 1,
    version: offset + 1,
    op: 'upsert',
    order_id: `ord-${offset}`,
    payload: { customer_id: 'c', status: 'paid', total_cents: 5, currency: 'EUR', item_count: 1 },
  };
  const value = encodeSingleObject(orders.versions[0].schema, event);
  const r = decodeRecord({ topic: 't', partition, offset, value, timestamp: 1, size: value.length }, orders, decoder);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.value;
}

/** Real local storage that lets a second worker commit just before this one's next commit put. */
class RacingStorage extends LocalStorage {
  intruder: (() => Promise<unknown>) | undefined;
  override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const run = key.startsWith('_delta_log/') ? this.intruder : undefined;
    this.intruder = undefined;
    if (run) await run();
    return super.putIfAbsent(key, body);
  }
}

describe('tier 1 bronze store', () => {
  let dir: string;
  let engine: LakeQueryEngine;
  beforeAll(async () => {
    dir = path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `merge-zombie-${randomUUID()}`);
    await fs.mkdir(dir, { recursive: true });
    engine = await LakeQueryEngine.create();
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('zombie offsets race: a commit landing after the offset check is MERGE_OFFSETS_MOVED, and only the owner\'s batch is in bronze', async () => {
    const racing = new Map<string, RacingStorage>();
    const zombieTables = new TableSet({
      storageFor: (name) => racing.get(name) ?? racing.set(name, new RacingStorage(path.join(dir, name))).get(name)!,
      tablePrefix: 'z_',
    });
    const ownerTables = new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: 'z_' });
    const zombie = new LakeBronzeStore(zombieTables, engine);
    const owner = new LakeBronzeStore(ownerTables, engine);
    const appId = 'tier1:t:0';
    const tp = { topic: 't', partition: 0 };

    await owner.append(orders, [record(0), record(1)], [{ tp, appId, expected: undefined, last: 1 }]);
    expect(await zombie.writtenOffsets(orders, [appId])).toEqual(new Map([[appId, 1]]));

    // The zombie resumed from 1 and checks it; the new owner commits 2..3 before the zombie's put.
    racing.get(zombieTables.name(orders.tables.bronze))!.intruder = () => owner.append(orders, [record(2), record(3)], [{ tp, appId, expected: 1, last: 3 }]);
    await expect(zombie.append(orders, [record(2), record(3)], [{ tp, appId, expected: 1, last: 3 }])).rejects.toMatchObject({
      code: 'MERGE_OFFSETS_MOVED',
      retryable: false,
      details: { appId, table: '3', expected: '1' },
    });

    expect(await owner.writtenOffsets(orders, [appId])).toEqual(new Map([[appId, 3]]));
    const table = (await ownerTables.existing(orders.tables.bronze))!;
    const session = await engine.open({ bronze: await table.currentView() });
    try {
      const rows = await session.query('SELECT count(*) AS n, count(DISTINCT _kafka_offset) AS offsets FROM bronze');
      expect(rows[0]).toMatchObject({ n: 4n, offsets: 4n });
    } finally {
      session.close();
    }
  });

  // One event dated years ahead (a foreign writer) made the rebuild measure its watermark from
  // that event: it returned that event alone, and the window covered none of the recent ids.
  it('rebuilds the dedup window up to the clock, whatever event bronze holds from the future', async () => {
    const now = Date.UTC(2026, 10, 29, 12, 0, 30);
    const tables = new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: 'future_' });
    const store = new LakeBronzeStore(tables, engine, () => now);
    const recent = Array.from({ length: 5 }, (_, i) => record(i, 0, `recent-${i}`, now - 10_000 + i));
    const future = record(5, 0, 'year-2100', Date.UTC(2100, 0, 1));
    await store.append(orders, [...recent, future], [{ tp: { topic: 't', partition: 0 }, appId: 'f:t-0', expected: undefined, last: 5 }]);
    const rebuilt = await store.recentEventIds(orders, 0, 60_000, 100);
    expect(rebuilt.ids.map((k) => k.eventId).sort()).toEqual(['recent-0', 'recent-1', 'recent-2', 'recent-3', 'recent-4', 'year-2100']);
  });

  it('answers the dedup window from bronze: the newest ids with truncation, and which candidates are committed, for hostile ids too', async () => {
    const tables = new TableSet({ storageFor: (name) => new LocalStorage(path.join(dir, name)), tablePrefix: 'd_' });
    const store = new LakeBronzeStore(tables, engine);
    const hostile = [`it's "quoted"`, '[\\"x\\"]', "'); DROP TABLE bronze; --", 'ünï-😀', ' spaced ', '{"a":1}'];
    // Partition 0: offsets 0..19 (ids e-0.., event times base+offset); partition 1: the hostile ids.
    const p0 = Array.from({ length: 20 }, (_, i) => record(i, 0, `p0-${i}`));
    const p1 = hostile.map((id, i) => record(i, 1, id));
    await store.append(orders, p0, [{ tp: { topic: 't', partition: 0 }, appId: 'd:t-0', expected: undefined, last: 19 }]);
    await store.append(orders, p1, [{ tp: { topic: 't', partition: 1 }, appId: 'd:t-1', expected: undefined, last: p1.length - 1 }]);

    const all = await store.recentEventIds(orders, 0, 60_000, 100);
    expect(all.truncated).toBe(false);
    expect(all.ids.map((k) => k.eventId).sort()).toEqual(p0.map((r) => r.eventId).sort());
    const newest = await store.recentEventIds(orders, 0, 60_000, 5);
    expect(newest).toEqual({ truncated: true, ids: [19, 18, 17, 16, 15].map((i) => ({ eventId: `p0-${i}`, eventTimeMs: p0[i].eventTimeMs })) });
    // Only what is inside the watermark of the partition's newest event time.
    expect((await store.recentEventIds(orders, 0, 4, 100)).ids.map((k) => k.eventId).sort()).toEqual(['p0-15', 'p0-16', 'p0-17', 'p0-18', 'p0-19']);

    const key = (r: BronzeRecord) => ({ eventId: r.eventId, eventTimeMs: r.eventTimeMs, bucket: r.bucket });
    // Committed ids are found, whichever Kafka partition brought them (a topic that gained
    // partitions moves keys between them: a replayed copy may come through another one); an
    // unknown id and near misses are not.
    const found = await store.committedEventIds(orders, [...p1.map(key), { eventId: 'nope', eventTimeMs: p1[0].eventTimeMs, bucket: p1[0].bucket }, key(p0[0]), { eventId: `it's`, eventTimeMs: p1[0].eventTimeMs, bucket: p1[0].bucket }]);
    expect([...found].sort()).toEqual([...hostile, 'p0-0'].sort());
    expect(await store.committedEventIds(orders, [key(p0[3]), key(p0[7])])).toEqual(new Set(['p0-3', 'p0-7']));
    // The same id at another event time is another event; in another bucket, another entity's.
    expect(await store.committedEventIds(orders, [{ ...key(p0[3]), eventTimeMs: p0[3].eventTimeMs + 1 }])).toEqual(new Set());
    expect(await store.committedEventIds(orders, [{ ...key(p0[3]), bucket: (p0[3].bucket + 1) % orders.buckets }])).toEqual(new Set());
    // A candidate's event time outside every file's range prunes everything.
    expect(await store.committedEventIds(orders, [{ ...key(p0[3]), eventTimeMs: p0[3].eventTimeMs + 86_400_000 }])).toEqual(new Set());
    // Still one table with the 26 rows: nothing in the ids ran as SQL.
    const table = (await tables.existing(orders.tables.bronze))!;
    const session = await engine.open({ bronze: await table.currentView() });
    try {
      expect((await session.query('SELECT count(*) AS n FROM bronze'))[0]).toMatchObject({ n: 26n });
    } finally {
      session.close();
    }
  });
});
