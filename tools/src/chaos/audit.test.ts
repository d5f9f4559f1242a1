import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CONTRACTS, columnsOf, type ColumnType, type ContractName } from '@sluice/contracts';
import { LakeTable, LocalStorage, type DeltaType } from '@sluice/lake';
import { DLQ_HEADERS, REPLAY_HEADER } from '../dlq/dlq-record';
import { EventStream, Oracle, flatten, type GenEvent } from '../generator';
import { diffAgainstOracle, type AuditTarget } from './audit';

// The audit must be able to fail: a lake built from the oracle itself passes, and each defect
// the pipeline could make (contents, not only counts) is reported. Real DuckDB over real Delta
// tables on local disk; only the DLQ comes from a list instead of a Kafka topic.

const TYPE: Record<ColumnType, DeltaType> = { string: 'string', boolean: 'boolean', int: 'integer', long: 'long', float: 'float', double: 'double', 'timestamp-millis': 'timestamp' };

interface DlqRecord {
  partition: number;
  offset: number;
  key: null;
  value: Buffer;
  headers: Record<string, Buffer>;
}

interface Lake {
  bronze: Partial<Record<ContractName, Record<string, unknown>[]>>;
  silver: Partial<Record<ContractName, Record<string, unknown>[]>>;
  gold: Record<string, Record<string, unknown>[]>;
  dlq: DlqRecord[];
}

const events = new EventStream({ seed: 5, runId: 'audit', entities: { orders: 60, inventory: 30, clickstream: 40 }, invalidRate: 0.02 }).take(900);
const oracle = new Oracle();
events.forEach((e, i) => oracle.add(e, i % 2 === 0 ? 'http' : 'raw'));
const dlqOfOracle = (): DlqRecord[] =>
  events
  .filter((e) => e.kind === 'invalid' && oracle.dlq.has(e.eventId))
  .map((e, offset) => ({
    partition: 0,
    offset,
    key: null,
    value: Buffer.from(e.body),
    headers: { [DLQ_HEADERS.reason]: Buffer.from(e.reason as string), [DLQ_HEADERS.sourceTopic]: Buffer.from('raw'), [DLQ_HEADERS.sourcePartition]: Buffer.from('0'), [DLQ_HEADERS.sourceOffset]: Buffer.from(String(offset)) },
  }));

/** A contract row as the tables hold it: every column of the contract, timestamps as Dates. */
function rowOf(contract: ContractName, e: GenEvent): Record<string, unknown> {
  const flat = flatten(e);
  return Object.fromEntries(columnsOf(CONTRACTS[contract]).map((c) => [c.name, c.type === 'timestamp-millis' ? new Date(flat[c.name] as number) : (flat[c.name] ?? null)]));
}

function lakeOfOracle(): Lake {
  const lake: Lake = { bronze: {}, silver: {}, gold: {}, dlq: dlqOfOracle() };
  for (const contract of oracle.contracts()) {
    lake.bronze[contract] = [...oracle.events(contract).values()].map((e) => ({ ...rowOf(contract, e), event_date: new Date(e.event_time).toISOString().slice(0, 10) }));
    lake.silver[contract] = [...oracle.silver(contract).values()].map((e) => rowOf(contract, e));
    for (const { aggregate, rows } of oracle.gold(contract)) {
      lake.gold[aggregate.table] = rows.map((w) => ({ window_ms: w.windowMs, ...w.group, ...w.measures }));
    }
  }
  return lake;
}

async function audit(lake: Lake): Promise<string[]> {
  return (await report(lake)).problems;
}

async function report(lake: Lake, extra: Partial<AuditTarget> = {}): Promise<Awaited<ReturnType<typeof diffAgainstOracle>>> {
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-audit-'));
  try {
    for (const contract of oracle.contracts()) {
      const c = CONTRACTS[contract];
      const columns = columnsOf(c).map((col) => ({ name: col.name, type: TYPE[col.type], nullable: true }));
      const tables: [string, Record<string, unknown>[], typeof columns][] = [
        [c.tables.bronze, lake.bronze[contract] ?? [], [...columns, { name: 'event_date', type: 'date', nullable: true }]],
        [c.tables.silver, lake.silver[contract] ?? [], columns],
      ];
      for (const a of c.aggregates) {
        const gold = [{ name: 'window_ms', type: 'long' as DeltaType, nullable: false }, ...a.groupBy.map((g) => columns.find((col) => col.name === g)!), ...a.measures.map((m) => ({ name: m.name, type: 'long' as DeltaType, nullable: true }))];
        tables.push([a.table, lake.gold[a.table] ?? [], gold]);
      }
      for (const [name, rows, cols] of tables) {
        const table = await LakeTable.create(new LocalStorage(path.join(root, name)), { name, columns: cols });
        if (rows.length > 0) await table.append({ rows });
      }
    }
    const target: AuditTarget = { lake: { root }, brokers: 'unused:1', dlqTopic: 'unused', readDlq: async () => lake.dlq, ...extra };
    return await diffAgainstOracle(target, oracle);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

describe('the chaos audit', () => {
  it('passes a lake that equals the oracle (the generator made deletes, v1 events and dead letters)', async () => {
    expect(oracle.dlq.size).toBeGreaterThan(0);
    expect([...oracle.events('orders').values()].some((e) => e.schema_version === 1)).toBe(true);
    expect(await audit(lakeOfOracle())).toEqual([]);
  }, 60_000);

  it('counts an invalid event produced to raw twice as a repeat of the sender, and a raw record dead-lettered twice as a fault', async () => {
    const twice = lakeOfOracle();
    const again = twice.dlq[0];
    twice.dlq.push({ ...again, offset: 999, headers: { ...again.headers, [DLQ_HEADERS.sourceOffset]: Buffer.from('999') } });
    expect(await report(twice)).toMatchObject({ problems: [], dlqRecords: dlqOfOracle().length + 1, dlqRawRepeats: 1 });
    const sameSource = lakeOfOracle();
    sameSource.dlq.push({ ...sameSource.dlq[0], offset: 999 });
    expect((await audit(sameSource)).join('\n')).toMatch(/DLQ: 1 source records dead-lettered more than once/);
  }, 60_000);

  it('matches each dead letter to the raw record its event was delivered as', async () => {
    // The DLQ records of the oracle name raw/0/<their index> as their source.
    const delivered = new Map(dlqOfOracle().map((m) => [/"event_id":"([^"]+)"/.exec(m.value.toString())![1], `raw/0/${m.offset}`]));
    expect(delivered.size).toBeGreaterThan(1);
    expect((await report(lakeOfOracle(), { invalidSources: delivered })).problems).toEqual([]);
    // validate naming the next offset: each dead letter is still present and unique.
    const shifted = new Map([...delivered].map(([id, at]) => [id, at.replace(/\/(\d+)$/, (_, o: string) => `/${Number(o) + 1}`)]));
    expect((await report(lakeOfOracle(), { invalidSources: shifted })).problems.join('\n')).toMatch(
      new RegExp(`DLQ: ${delivered.size} dead letters name another source than the record their event was delivered as`),
    );
  }, 60_000);

  it('checks DLQ replays: each replayed record back once as a failed replay with its bytes', async () => {
    // The DLQ tool replayed the first three records; validate dead-lettered each again from its new raw record.
    const withReplays = (copies: number[]): Lake => {
      const lake = lakeOfOracle();
      copies.forEach((i, n) => {
        const original = lake.dlq[i];
        const headers = { ...original.headers, [DLQ_HEADERS.sourceOffset]: Buffer.from(String(5000 + n)), [REPLAY_HEADER]: Buffer.from(`unused/0/${original.offset}`) };
        lake.dlq.push({ ...original, offset: 1000 + n, headers });
      });
      return lake;
    };
    expect(await report(withReplays([0, 1, 2]), { replaysSent: 3 })).toMatchObject({ problems: [], dlqRawRepeats: 3 });
    expect((await audit(withReplays([0, 1, 2]))).join('\n')).toMatch(/DLQ: 3 failed replays for 0 records replayed/);
    expect((await report(withReplays([0, 1]), { replaysSent: 3 })).problems.join('\n')).toMatch(/DLQ: 2 failed replays for 3 records replayed/);
    const doubled = (await report(withReplays([0, 1, 1]), { replaysSent: 2 })).problems.join('\n');
    expect(doubled).toMatch(/DLQ: 1 replayed records came back more than once \(e\.g\. unused\/0\/1 ×2\)/);
    const changed = withReplays([0, 1, 2]);
    changed.dlq[changed.dlq.length - 1].value = Buffer.from('{"event_id":"other"}');
    expect((await report(changed, { replaysSent: 3 })).problems.join('\n')).toMatch(/DLQ: 1 failed replays do not hold the bytes of the record they name \(e\.g\. unused\/0\/2: other bytes\)/);
    const nowhere = withReplays([0, 1, 2]);
    nowhere.dlq[nowhere.dlq.length - 1].headers[REPLAY_HEADER] = Buffer.from('unused/0/77777');
    expect((await report(nowhere, { replaysSent: 3 })).problems.join('\n')).toMatch(/unused\/0\/77777: no such DLQ record/);
  }, 60_000);

  it.each<[string, (lake: Lake) => void, RegExp]>([
    ['a bronze row lost', (l) => l.bronze.orders!.pop(), /bronze_orders: 1 acknowledged events lost/],
    ['a bronze row twice', (l) => l.bronze.inventory!.push({ ...l.bronze.inventory![0] }), /bronze_inventory: 1 event_ids duplicated/],
    ['bronze payloads nulled', (l) => l.bronze.clickstream!.forEach((r) => (r.page = null)), /bronze_clickstream: \d+ rows differ from the events acknowledged/],
    ['a bronze event_date off', (l) => (l.bronze.orders![0].event_date = '2001-01-01'), /bronze_orders: 1 rows differ from the events acknowledged/],
    ['silver event_time an hour late', (l) => l.silver.inventory!.forEach((r) => (r.event_time = new Date((r.event_time as Date).getTime() + 3_600_000))), /silver_inventory: \d+ rows differ from the oracle/],
    ['a silver schema_version changed', (l) => (l.silver.orders![0].schema_version = 99), /silver_orders: 1 rows differ from the oracle/],
    [
      'a v1 silver row keeping a value its version does not have',
      (l) => (l.silver.orders!.find((r) => r.schema_version === 1)!.coupon_code = 'STALE'),
      /silver_orders: 1 rows differ from the oracle/,
    ],
    ['a DLQ record whose bytes changed',
      (l) => (l.dlq[0].value = Buffer.concat([l.dlq[0].value, Buffer.from(' ')])),
      /DLQ: 1 records do not hold the bytes/],
    ['a DLQ record without its source position', (l) => delete l.dlq[1].headers[DLQ_HEADERS.sourceOffset], /DLQ: 1 records without their source/],
    ['a gold measure off by one', (l) => ((Object.values(l.gold)[0][0] as Record<string, number>).events += 1), /gold_.*: 1 rows differ from the oracle/],
  ])('reports %s', async (_label, mutate, expected) => {
    const lake = lakeOfOracle();
    mutate(lake);
    const problems = await audit(lake);
    expect(problems.join('\n')).toMatch(expected);
  }, 60_000);
});
