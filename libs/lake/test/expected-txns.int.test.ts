import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeTable, LocalStorage, type ColumnSpec } from '../src';
import { tempDir } from './helpers';

const columns: ColumnSpec[] = [
  { name: 'key', type: 'long' },
  { name: 'v', type: 'long' },
  { name: 'bucket', type: 'integer' },
];
const rows = (from: number, to: number, v = 1) => Array.from({ length: to - from }, (_, i) => ({ key: from + i, v, bucket: (from + i) % 2 }));

/**
 * Real local storage whose next commit-file put first lets `intruder` commit (a real second
 * writer): the interleaving of a zombie writer whose snapshot is already stale when it commits.
 */
class RacingStorage extends LocalStorage {
  intruder: (() => Promise<unknown>) | undefined;
  override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const run = key.startsWith('_delta_log/') ? this.intruder : undefined;
    this.intruder = undefined;
    if (run) await run();
    return super.putIfAbsent(key, body);
  }
}

describe('expectedTxns: writes fenced on the txn versions they resumed from', () => {
  let dir: string;
  let n = 0;
  const fresh = async () => {
    const storage = new RacingStorage(path.join(dir, `t${n++}`));
    const table = await LakeTable.create(storage, { columns, partitionColumns: ['bucket'] });
    const other = await LakeTable.open(new LocalStorage(storage.root));
    return { storage, table, other };
  };
  beforeAll(async () => {
    dir = await tempDir('lake-expected-txns');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('append commits when every expected txn holds (null = absent, number, bigint beyond 2^53)', async () => {
    const { table } = await fresh();
    const big = 2n ** 60n + 7n;
    await table.append({ rows: rows(0, 2) }, { txns: [{ appId: 'p0', version: 5 }, { appId: 'p1', version: big }], expectedTxns: { p0: null, p1: null } });
    const r = await table.append({ rows: rows(2, 4) }, { txns: [{ appId: 'p0', version: 9 }, { appId: 'p1', version: big + 1n }], expectedTxns: { p0: 5, p1: big } });
    expect(r.version).toBe(2);
    const snap = await table.snapshot();
    expect(snap.txnVersion('p0')).toBe(9n);
    expect(snap.txnVersion('p1')).toBe(big + 1n);
  });

  it('append refuses with LAKE_TXN_MISMATCH (not retryable) when the snapshot contradicts it, committing nothing', async () => {
    const { table } = await fresh();
    await table.append({ rows: rows(0, 2) }, { txns: [{ appId: 'p0', version: 5 }] });
    await expect(table.append({ rows: rows(2, 4) }, { txns: [{ appId: 'p0', version: 9 }], expectedTxns: { p0: 4 } })).rejects.toMatchObject({
      code: 'LAKE_TXN_MISMATCH',
      retryable: false,
      details: { appId: 'p0', expected: '4', actual: '5' },
    });
    await expect(table.append({ rows: rows(2, 4) }, { expectedTxns: { p0: null } })).rejects.toMatchObject({ code: 'LAKE_TXN_MISMATCH' });
    await expect(table.append({ rows: rows(2, 4) }, { expectedTxns: { never: 1 } })).rejects.toMatchObject({ code: 'LAKE_TXN_MISMATCH', details: { actual: 'null' } });
    await expect(table.append({ rows: rows(2, 4) }, { expectedTxns: { p0: 1.5 } })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    expect((await table.snapshot()).version).toBe(1);
  });

  it('zombie writer race: a commit that moves the txn after the snapshot is read is LAKE_TXN_MISMATCH, not a retried append', async () => {
    const { storage, table, other } = await fresh();
    await table.append({ rows: rows(0, 2) }, { txns: [{ appId: 'p0', version: 5 }] });
    // The new owner of the partition commits offsets 6..9 while the zombie's commit is in flight.
    storage.intruder = () => other.append({ rows: rows(100, 104) }, { txns: [{ appId: 'p0', version: 9 }] });
    await expect(table.append({ rows: rows(2, 4) }, { txns: [{ appId: 'p0', version: 7 }], expectedTxns: { p0: 5 } })).rejects.toMatchObject({
      code: 'LAKE_TXN_MISMATCH',
      retryable: false,
      details: { winnerVersion: 2, appId: 'p0', expected: '5', actual: '9' },
    });
    const snap = await table.snapshot();
    expect(snap.version).toBe(2);
    expect(snap.txnVersion('p0')).toBe(9n);
    expect(snap.files.reduce((a, f) => a + (snap.stats(f)?.numRecords ?? 0), 0)).toBe(6); // the zombie's rows are not in

    // A winner that leaves the expected appIds alone is retried past as before.
    storage.intruder = () => other.append({ rows: rows(200, 201) }, { txns: [{ appId: 'p1', version: 1 }] });
    const ok = await table.append({ rows: rows(4, 6) }, { txns: [{ appId: 'p0', version: 11 }], expectedTxns: { p0: 9 } });
    expect(ok).toMatchObject({ version: 4, attempts: 2 });
  });

  it('merge: refused at the snapshot and against a racing winner; commits when the txn holds', async () => {
    const spec = { keys: ['key'], versionColumn: 'v' } as const;
    const { storage, table, other } = await fresh();
    await table.merge({ ...spec, source: { rows: rows(0, 4) }, txns: [{ appId: 'fold-0', version: 3 }], expectedTxns: { 'fold-0': null } });
    await expect(table.merge({ ...spec, source: { rows: rows(0, 4, 2) }, expectedTxns: { 'fold-0': 2 } })).rejects.toMatchObject({ code: 'LAKE_TXN_MISMATCH' });
    storage.intruder = () => other.append({ rows: [] }, { txns: [{ appId: 'fold-0', version: 8 }] });
    await expect(table.merge({ ...spec, source: { rows: rows(0, 4, 2) }, txns: [{ appId: 'fold-0', version: 4 }], expectedTxns: { 'fold-0': 3 } })).rejects.toMatchObject({
      code: 'LAKE_TXN_MISMATCH',
      details: { expected: '3', actual: '8' },
    });
    const merged = await table.merge({ ...spec, source: { rows: rows(0, 4, 2) }, txns: [{ appId: 'fold-0', version: 9 }], expectedTxns: { 'fold-0': 8 } });
    expect(merged.rowsUpdated).toBe(4);
    expect(await table.txnVersion('fold-0')).toBe(9n);
  });

  it('amortised merge checks before the tail grows', async () => {
    const { table } = await fresh();
    await table.append({ rows: rows(0, 4) }, { txns: [{ appId: 'a', version: 1 }] });
    await expect(
      table.merge({ keys: ['key'], versionColumn: 'v', source: { rows: rows(0, 4, 2) }, amortise: {}, expectedTxns: { a: 0 } }),
    ).rejects.toMatchObject({ code: 'LAKE_TXN_MISMATCH' });
    await expect(fs.access(path.join((table.storage as LocalStorage).root, '_sluice_tail'))).rejects.toThrow();
  });
});
