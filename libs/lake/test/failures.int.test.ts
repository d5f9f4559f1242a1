import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LAKE_CHANNELS, LakeQueryEngine, LakeTable, LocalStorage, MIN_VACUUM_RETENTION_MS } from '../src';
import { KEY_V_BUCKET, commitFile, deltaProbe, keyRows, tempDir } from './helpers';

const columns = KEY_V_BUCKET;
const rows = keyRows;

describe('failure behaviour, refusals and concurrent writers', () => {
  let dir: string;
  let n = 0;
  const fresh = async (properties: Record<string, string> = {}) => {
    const root = path.join(dir, `t${n++}`);
    return { root, table: await LakeTable.create(new LocalStorage(root), { columns, partitionColumns: ['bucket'], properties }) };
  };
  beforeAll(async () => {
    dir = await tempDir('lake-failures');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('a torn, empty or garbage commit is LAKE_LOG_CORRUPT naming the file', async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    const good = await fs.readFile(commitFile(root, 1), 'utf8');
    await fs.writeFile(commitFile(root, 1), good.slice(0, good.length - 20)); // torn last line
    await expect(table.snapshot()).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining('00000000000000000001.json') });
    await fs.writeFile(commitFile(root, 1), '');
    await expect(table.snapshot()).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining('is empty') });
    await fs.writeFile(commitFile(root, 1), '[1,2]\n');
    await expect(table.snapshot()).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT' });
  });

  it('an unreadable checkpoint: a reader replays from the one before, or from version 0, and says so; with the commits gone it is LAKE_LOG_CORRUPT', async () => {
    const { root, table } = await fresh();
    for (let i = 0; i < 22; i++) await table.append({ rows: rows(i * 2, i * 2 + 2) });
    const checkpoint = (v: number) => path.join(root, '_delta_log', `${String(v).padStart(20, '0')}.checkpoint.parquet`);
    await fs.access(checkpoint(20));
    const failed: unknown[] = [];
    const listener = (m: unknown) => failed.push(m);
    subscribe(LAKE_CHANNELS.checkpointFailed, listener);
    try {
      const want = (await table.snapshot()).files.map((f) => f.path).sort();
      const reader = async () => (await (await LakeTable.open(new LocalStorage(root))).snapshot()).files.map((f) => f.path).sort();
      // Torn by a writer outside the protocol: Delta readers fall back, so does this one.
      await fs.writeFile(checkpoint(20), 'PAR1 torn');
      expect(await reader()).toEqual(want);
      // Once per load that met it (the metric behind SluiceCheckpointsFailing).
      expect(failed.length).toBeGreaterThan(0);
      expect(failed).toEqual(failed.map(() => expect.objectContaining({ version: 20, code: 'LAKE_LOG_CORRUPT', table: expect.stringContaining(root) })));
      await fs.writeFile(checkpoint(10), 'not parquet at all');
      failed.length = 0;
      expect(await reader()).toEqual(want); // from version 0
      expect(failed.map((f) => (f as { version: number }).version)).toEqual(expect.arrayContaining([20, 10]));
      // A torn commit after the checkpoint blocks every replay: it is the answer, not the checkpoint.
      const good21 = await fs.readFile(commitFile(root, 21), 'utf8');
      await fs.writeFile(commitFile(root, 21), good21.slice(0, good21.length - 20));
      await expect(LakeTable.open(new LocalStorage(root))).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining('00000000000000000021.json') });
      await fs.writeFile(commitFile(root, 21), good21);
      // Commits before the last checkpoint cleaned up: nothing left to replay from.
      await fs.rm(commitFile(root, 3));
      await expect(LakeTable.open(new LocalStorage(root))).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining('00000000000000000020.checkpoint.parquet') });
    } finally {
      unsubscribe(LAKE_CHANNELS.checkpointFailed, listener);
    }
  });

  // Cleanup deleted everything below the newest old-enough checkpoint without reading it: torn,
  // it left nothing for readers to fall back on, and the table could not be opened.
  it('log cleanup keeps the log below an unreadable checkpoint, down to the newest one that reads', async () => {
    const { root, table } = await fresh();
    for (let i = 0; i < 22; i++) await table.append({ rows: rows(i * 2, i * 2 + 2) });
    const checkpoint = (v: number) => path.join(root, '_delta_log', `${String(v).padStart(20, '0')}.checkpoint.parquet`);
    const want = (await table.snapshot()).files.map((f) => f.path).sort();
    await fs.writeFile(checkpoint(20), 'PAR1 torn');
    const cleaned = await table.cleanupLog({ retentionMs: 0, nowMs: Date.now() + 1000 });
    expect(cleaned.filesDeleted).toBeGreaterThan(0);
    await expect(fs.access(commitFile(root, 9))).rejects.toThrow(); // below checkpoint 10: gone
    await expect(fs.access(commitFile(root, 11))).resolves.toBeUndefined(); // above it: kept
    expect((await (await LakeTable.open(new LocalStorage(root))).snapshot()).files.map((f) => f.path).sort()).toEqual(want);
  });

  it('a gap in versions is LAKE_LOG_CORRUPT; a missing data file is LAKE_DATA_FILE_MISSING naming it', async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    await table.append({ rows: rows(4, 8) });
    const snap = await table.snapshot();
    const victim = snap.files[0];
    await fs.rm(path.join(root, victim.key));
    const engine = await LakeQueryEngine.create();
    await expect(
      (async () => {
        const s = await engine.open({ t: { storage: table.storage, snapshot: snap } });
        try {
          await s.query('SELECT count(*) FROM t');
        } finally {
          s.close();
        }
      })(),
    ).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING', message: expect.stringContaining(path.basename(victim.key)) });
    await expect(table.compact()).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
    await fs.rename(commitFile(root, 1), commitFile(root, 1) + '.moved');
    // A new reader replays the log and finds the gap (`table` already holds version 2 and reads
    // only what comes after it: snapshot-cache.int.test.ts).
    await expect(LakeTable.open(new LocalStorage(root))).rejects.toMatchObject({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining('00000000000000000001.json is missing') });
  });

  it('a SQL source over another table\'s files, one of them gone (vacuumed), is LAKE_DATA_FILE_MISSING naming it; a bad cast is still LAKE_INVALID_INPUT', async () => {
    const { root, table: source } = await fresh();
    await source.append({ rows: rows(0, 4) });
    const snap = await source.snapshot();
    const sql = await source.relationSql(snap);
    const victim = snap.files[0];
    await fs.rm(path.join(root, victim.key));
    const { table: target } = await fresh();
    const failure = await target.append({ sql }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ code: 'LAKE_DATA_FILE_MISSING', message: expect.stringContaining(path.basename(victim.key)) });
    await expect(target.merge({ source: { sql }, keys: ['key'], versionColumn: 'v' })).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
    await expect(target.append({ sql: `SELECT 'not a number' AS key, 1 AS v, 0 AS bucket` })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
  });

  it('files written by a writer that crashed before committing are invisible and vacuumed', async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    // Simulate the crash: data files land, the commit never does.
    const orphanDir = path.join(root, 'bucket=0');
    await fs.writeFile(path.join(orphanDir, 'part-crashed.parquet'), Buffer.alloc(100));
    expect((await table.snapshot()).files.some((f) => f.key.includes('crashed'))).toBe(false);
    const dry = await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000, dryRun: true });
    expect(dry.filesDeleted).toEqual(['bucket=0/part-crashed.parquet']);
    // Inside the retention window nothing goes (a concurrent writer may be about to commit it).
    expect((await table.vacuum()).filesDeleted).toEqual([]);
    await table.vacuum({ retentionMs: 0, unsafeShortRetention: true, nowMs: Date.now() + 1000 });
    await expect(fs.access(path.join(orphanDir, 'part-crashed.parquet'))).rejects.toThrow();
    expect((await deltaProbe('read', root)).rows.length).toBe(4);
  });

  it('vacuum refuses a retention under an hour unless told nothing uses the table, and deletes nothing then', async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    const orphan = path.join(root, 'bucket=0', 'part-in-flight.parquet');
    await fs.writeFile(orphan, Buffer.alloc(100));
    const later = Date.now() + 2 * 3_600_000;
    for (const retentionMs of [0, MIN_VACUUM_RETENTION_MS - 1]) {
      await expect(table.vacuum({ retentionMs, nowMs: later })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { retentionMs, minimumMs: MIN_VACUUM_RETENTION_MS } });
    }
    await fs.access(orphan);
    // A table property under the minimum is refused the same way.
    const short = await fresh({ 'delta.deletedFileRetentionDuration': 'interval 1 minute' });
    await expect(short.table.vacuum({ nowMs: later })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { retentionMs: 60_000 } });
    // At the minimum it runs: the file, unreferenced for two hours by the clock given, goes.
    expect((await table.vacuum({ retentionMs: MIN_VACUUM_RETENTION_MS, nowMs: later })).filesDeleted).toEqual(['bucket=0/part-in-flight.parquet']);
  });

  it('concurrent appenders all land on distinct versions (put-if-absent + retry)', async () => {
    const { table } = await fresh();
    const writers = Array.from({ length: 6 }, (_, i) => LakeTable.open(table.storage).then((t) => t.append({ rows: rows(i * 10, i * 10 + 10) }, { txns: [{ appId: `w${i}`, version: i }] })));
    const results = await Promise.all(writers);
    expect(new Set(results.map((r) => r.version)).size).toBe(6);
    const snap = await table.snapshot();
    expect(snap.version).toBe(6);
    expect(snap.files.reduce((a, f) => a + (snap.stats(f)?.numRecords ?? 0), 0)).toBe(60);
    for (let i = 0; i < 6; i++) expect(snap.txnVersion(`w${i}`)).toBe(BigInt(i));
  });

  it('two writers racing for one version: exactly one wins; the same txn appId conflicts', async () => {
    const { table } = await fresh();
    const storage = table.storage;
    const body = Buffer.from('{"commitInfo":{}}\n');
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => storage.putIfAbsent('_delta_log/00000000000000000001.json', body)));
    expect(outcomes.filter(Boolean).length).toBe(1);
    await fs.rm(path.join((storage as LocalStorage).root, '_delta_log/00000000000000000001.json'));

    // Left to the scheduler, the second writer may read the first's commit and never race at all;
    // b committing from inside a's put makes both have read version 0, every run.
    class RacingStorage extends LocalStorage {
      intruder: (() => Promise<unknown>) | undefined;
      override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
        const run = key.startsWith('_delta_log/') ? this.intruder : undefined;
        this.intruder = undefined;
        if (run) await run();
        return super.putIfAbsent(key, body);
      }
    }
    const racing = new RacingStorage((storage as LocalStorage).root);
    const a = await LakeTable.open(racing, { maxCommitAttempts: 3 });
    const b = await LakeTable.open(storage, { maxCommitAttempts: 3 });
    racing.intruder = () => b.append({ rows: rows(2, 4) }, { txns: [{ appId: 'same', version: 1 }] });
    await expect(a.append({ rows: rows(0, 2) }, { txns: [{ appId: 'same', version: 1 }] })).rejects.toMatchObject({
      code: 'LAKE_COMMIT_CONFLICT',
      retryable: true,
      details: { readVersion: 0, winnerVersion: 1 },
    });
    const snap = await table.snapshot();
    expect(snap.version).toBe(1);
    expect(snap.files.reduce((sum, f) => sum + (snap.stats(f)?.numRecords ?? 0), 0)).toBe(2); // b's rows only
  });

  it('a commit whose answer was lost and whose retry then found the file is recognised as its own, not a rival (no second copy)', async () => {
    // What an S3 client does when a PUT landed but its answer was lost: it retries, and the
    // retry's If-None-Match finds the file. Here the first put lands and reports "exists".
    class LostAnswerStorage extends LocalStorage {
      lose = false;
      override async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
        const landed = await super.putIfAbsent(key, body);
        if (this.lose && key.startsWith('_delta_log/') && landed) {
          this.lose = false;
          return false;
        }
        return landed;
      }
    }
    const { root } = await fresh();
    const storage = new LostAnswerStorage(root);
    const table = await LakeTable.open(storage);
    await table.append({ rows: rows(0, 4) });
    storage.lose = true;
    const blind = await table.append({ rows: rows(4, 8) });
    storage.lose = true;
    const withTxn = await table.append({ rows: rows(8, 10) }, { txns: [{ appId: 'a', version: 7 }], expectedTxns: { a: null } });
    expect([blind.version, withTxn.version]).toEqual([2, 3]);
    const snap = await table.snapshot();
    expect(snap.version).toBe(3);
    expect(snap.files.reduce((n, f) => n + (snap.stats(f)?.numRecords ?? 0), 0)).toBe(10);
    expect(snap.txnVersion('a')).toBe(7n);
  });

  it('merge conflicts with a compaction that removed the files it read', async () => {
    const { table } = await fresh();
    for (let i = 0; i < 3; i++) await table.append({ rows: rows(i * 10, i * 10 + 10) });
    // Stale snapshot trick: run the merge planning against version 3, let compaction commit first.
    const stale = await table.snapshot();
    await table.compact();
    const { commit } = await import('../src/table/commit');
    await expect(
      commit(table.storage, 'x', stale.version, stale.partitionColumns, {
        operation: 'MERGE',
        actions: [{ remove: { path: stale.files[0].path, dataChange: true, deletionTimestamp: Date.now() } }],
        isBlindAppend: false,
        readFiles: new Set(stale.files.map((f) => f.path)),
      }, 5),
    ).rejects.toMatchObject({ code: 'LAKE_COMMIT_CONFLICT', message: expect.stringContaining('concurrent delete') });
    // A blind append racing the compaction does not conflict.
    const append = await commit(table.storage, 'x', stale.version, stale.partitionColumns, { operation: 'WRITE', actions: [{ txn: { appId: 'z', version: 1 } }], isBlindAppend: true }, 5);
    expect(append.attempts).toBe(2);
  });

  // A compaction uploading for seconds while tier 1 commits every second spent an attempt on each
  // version taken meanwhile, and gave up after 15 without a single real race.
  it('passes the commits landed since its read, checking each once; only a put that loses a race spends an attempt', async () => {
    const { table } = await fresh();
    await table.append({ rows: rows(0, 10) });
    const stale = await table.snapshot();
    for (let i = 1; i <= 20; i++) await table.append({ rows: rows(i * 10, i * 10 + 10) });
    const { commit } = await import('../src/table/commit');
    const conflicts: unknown[] = [];
    const listener = (m: unknown) => conflicts.push(m);
    subscribe(LAKE_CHANNELS.conflict, listener);
    let late;
    try {
      late = await commit(table.storage, 'x', stale.version, stale.partitionColumns, { operation: 'OPTIMIZE', actions: [{ txn: { appId: 'late', version: 1 } }], isBlindAppend: false, readFiles: new Set(stale.files.map((f) => f.path)) }, 3);
    } finally {
      unsubscribe(LAKE_CHANNELS.conflict, listener);
    }
    expect(late).toMatchObject({ version: stale.version + 21, attempts: 2 });
    // One retry (the put that lost), not one per version passed (the retry metric counts these).
    expect(conflicts).toEqual([expect.objectContaining({ version: stale.version + 1, outcome: 'retry' })]);
    // A conflict among the versions passed is still one.
    await table.compact();
    await expect(
      commit(table.storage, 'x', stale.version, stale.partitionColumns, { operation: 'MERGE', actions: [{ remove: { path: stale.files[0].path, dataChange: true, deletionTimestamp: Date.now() } }], isBlindAppend: false, readFiles: new Set(stale.files.map((f) => f.path)) }, 3),
    ).rejects.toMatchObject({ code: 'LAKE_COMMIT_CONFLICT' });
  });

  it('refuses protocols, features and schemas it cannot honour', async () => {
    const root = path.join(dir, 'foreign');
    await fs.mkdir(path.join(root, '_delta_log'), { recursive: true });
    const schemaString = JSON.stringify({ type: 'struct', fields: [{ name: 'a', type: 'long', nullable: true, metadata: {} }] });
    const meta = { metaData: { id: 'x', format: { provider: 'parquet', options: {} }, schemaString, partitionColumns: [], configuration: {} } };
    await fs.writeFile(commitFile(root, 0), `${JSON.stringify({ protocol: { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['deletionVectors'], writerFeatures: ['deletionVectors'] } })}\n${JSON.stringify(meta)}\n`);
    await expect(LakeTable.open(new LocalStorage(root))).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    await fs.writeFile(commitFile(root, 0), `${JSON.stringify({ protocol: { minReaderVersion: 1, minWriterVersion: 4 } })}\n${JSON.stringify(meta)}\n`);
    const w4 = await LakeTable.open(new LocalStorage(root)); // readable
    await expect(w4.append({ rows: [{ a: 1 }] })).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    // Maintenance writes too: a checkpoint would drop what it does not know, vacuum delete files it cannot see referenced.
    await expect(w4.checkpoint()).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    await expect(w4.vacuum({ retentionMs: 0, unsafeShortRetention: true })).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    await expect(w4.cleanupLog({ retentionMs: 0 })).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    const inv = JSON.stringify({ type: 'struct', fields: [{ name: 'a', type: 'long', nullable: true, metadata: { 'delta.invariants': '{"expression":{"expression":"a > 0"}}' } }] });
    await fs.writeFile(commitFile(root, 0), `${JSON.stringify({ protocol: { minReaderVersion: 1, minWriterVersion: 2 } })}\n${JSON.stringify({ metaData: { ...meta.metaData, schemaString: inv } })}\n`);
    await expect((await LakeTable.open(new LocalStorage(root))).append({ rows: [{ a: 1 }] })).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });

    const s = new LocalStorage(path.join(dir, 'bad-schemas'));
    await expect(LakeTable.create(s, { columns: [{ name: 'a b', type: 'long' }] })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'long' }, { name: 'A', type: 'string' }] })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'timestamp_ntz' as never }] })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'long' }], properties: { 'delta.enableDeletionVectors': 'true' } })).rejects.toMatchObject({ code: 'LAKE_UNSUPPORTED_PROTOCOL' });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'long' }], properties: { 'delta.logRetentionDuration': '30 days' } })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'long' }], partitionColumns: ['a'] })).rejects.toMatchObject({ code: 'LAKE_SCHEMA_INVALID' });
    const created = await LakeTable.create(s, { columns: [{ name: 'a', type: 'long', nullable: false }, { name: 'ü_名前', type: 'string' }] });
    await expect(LakeTable.create(s, { columns: [{ name: 'a', type: 'long' }] })).rejects.toMatchObject({ code: 'LAKE_TABLE_EXISTS' });
    await expect(created.append({ rows: [{ a: null }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    await expect(created.append({ rows: [{ a: 'not a number' }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    await expect(LakeTable.open(new LocalStorage(path.join(dir, 'nothing-here')))).rejects.toMatchObject({ code: 'LAKE_NOT_FOUND' });
  });

  it('a staging file that cannot be written is LAKE_STORAGE_UNAVAILABLE naming the errno, not the rows\' fault', async () => {
    // A binary column sends JS rows through an NDJSON staging file in the scratch directory.
    const blocker = path.join(dir, 'not-a-directory');
    await fs.writeFile(blocker, '');
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'staging')), { columns: [{ name: 'b', type: 'binary' }] }, { scratchDir: path.join(blocker, 'scratch') });
    const failure = await table.append({ rows: [{ b: new Uint8Array([1, 2]) }] }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ code: 'LAKE_STORAGE_UNAVAILABLE', retryable: true, details: { errno: 'ENOTDIR' } });
    // Rows DuckDB cannot convert are still the caller's.
    const ok = await LakeTable.create(new LocalStorage(path.join(dir, 'staging-ok')), { columns: [{ name: 'b', type: 'binary' }, { name: 'n', type: 'long' }] });
    await expect(ok.append({ rows: [{ b: new Uint8Array([1]), n: 'not a number' }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
  });

  it('refuses a null inside a column where its nested type allows none, at any depth, and takes the nulls it allows', async () => {
    // Written, such a null made delta-rs refuse every read of the table ("unmasked nulls").
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'nested-not-null')), {
      columns: [
        { name: 'id', type: 'long', nullable: false },
        { name: 'st', type: { type: 'struct', fields: [{ name: 'a', type: 'long', nullable: false, metadata: {} }, { name: 'b', type: 'string', nullable: true, metadata: {} }] } },
        { name: 'arr', type: { type: 'array', elementType: 'long', containsNull: false } },
        { name: 'deep', type: { type: 'array', elementType: { type: 'struct', fields: [{ name: 'k', type: 'string', nullable: false, metadata: {} }] }, containsNull: true } },
        { name: 'm', type: { type: 'map', keyType: 'string', valueType: 'long', valueContainsNull: false } },
      ],
    });
    const fine = { id: 1, st: { a: 1, b: null }, arr: [1, 2], deep: [{ k: 'x' }, null], m: { one: 1 } };
    await table.append({ rows: [fine, { id: 2, st: null, arr: null, deep: null, m: null }] });
    const refused = async (row: Record<string, unknown>) => (await table.append({ rows: [fine, row] }).catch((err: unknown) => err)) as { code: string; details: { columns: string[] } };
    expect(await refused({ ...fine, st: { a: null, b: 'x' } })).toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { columns: ['st'] } });
    expect(await refused({ ...fine, arr: [1, null] })).toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { columns: ['arr'] } });
    expect(await refused({ ...fine, deep: [{ k: null }] })).toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { columns: ['deep'] } });
    expect(await refused({ ...fine, m: { one: null } })).toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { columns: ['m'] } });
    expect(await refused({ ...fine, id: null, arr: [null] })).toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { columns: ['id', 'arr'] } });
    expect((await table.snapshot()).files).toHaveLength(1); // only the first, good append
  });

  it('append-only tables refuse MERGE', async () => {
    const root = path.join(dir, 'append-only');
    const table = await LakeTable.create(new LocalStorage(root), { columns, properties: { 'delta.appendOnly': 'true' } });
    await table.append({ rows: rows(0, 2) });
    await expect(table.merge({ source: { rows: rows(0, 1, 2) }, keys: ['key'], versionColumn: 'v' })).rejects.toMatchObject({ code: 'LAKE_APPEND_ONLY' });
  });

  it('a locked query engine reads the lake and nothing else', async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir] });
    const session = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      expect(await session.queryJson('SELECT count(*) AS n FROM t WHERE key >= $min', { min: 2 })).toEqual([{ n: '2' }]);
      await expect(session.query(`SELECT * FROM read_csv('/etc/passwd')`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
      await expect(session.query(`COPY (SELECT 1) TO '${path.join(root, 'evil.csv')}'`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
      await expect(session.query(`SET enable_external_access=true`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
      await expect(session.query(`ATTACH '${path.join(root, 'x.db')}'`)).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED' });
    } finally {
      session.close();
    }
    await expect(fs.access(path.join(root, 'evil.csv'))).rejects.toThrow();
  });

  it('a locked engine spills past its memory limit into the directory it is given', async () => {
    // DuckDB's default spill directory is .tmp under the working directory: read-only in the images.
    const sort = `SELECT s FROM (SELECT repeat(chr(97 + (x % 26)::INT), 100) || x::VARCHAR AS s FROM range(2500000) t(x)) ORDER BY s LIMIT 1 OFFSET 2000000`;
    const sortWith = async (tempDirectory: string) => {
      const engine = await LakeQueryEngine.create({ locked: true, allowedDirectories: [dir], memoryLimit: '64MB', threads: 1, tempDirectory, maxTempDirectoryMb: 512 });
      const session = await engine.open({});
      try {
        expect(await session.queryJson(`SELECT current_setting('temp_directory') AS d`)).toEqual([{ d: tempDirectory }]);
        return await session.queryJson(sort);
      } finally {
        session.close();
      }
    };
    // A sort of ~300 MB against 64 MB: done by spilling where it is told...
    expect(await sortWith(path.join(dir, 'spill'))).toEqual([{ s: expect.stringMatching(/^u{100}\d+$/) }]);
    // ...and failing where it cannot write (so the setting is what it spills to).
    const blocked = path.join(dir, 'not-a-directory');
    await fs.writeFile(blocked, '');
    await expect(sortWith(path.join(blocked, 'spill'))).rejects.toThrow(/directory/i);
  });

  it('reads and appends to a table that delta-rs wrote', async () => {
    const root = path.join(dir, 'by-delta-rs');
    // Written as text: a JS number literal would already have rounded 2^53 + 1.
    await deltaProbe('write', root, '[{"id": 1, "name": "a", "big": 9007199254740993}, {"id": 2, "name": "b", "big": 1}]', 'append');
    await deltaProbe('write', root, JSON.stringify([{ id: 3, name: 'c', big: 2 }]), 'append');
    const table = await LakeTable.open(new LocalStorage(root));
    const snap = await table.snapshot();
    expect(snap.version).toBe(1);
    expect(snap.schema.fields.map((f) => f.name)).toEqual(['id', 'name', 'big']);
    // Lossless stats: 2^53 + 1 survives the log parse.
    const maxBig = snap.files.map((f) => snap.stats(f)?.maxValues?.big).find((v) => typeof v === 'bigint');
    expect(maxBig).toBe(9007199254740993n);
    await table.append({ rows: [{ id: 4, name: 'd', big: 9007199254740995n }] }, { txns: [{ appId: 'sluice', version: 1 }] });
    // A checkpoint written by delta-rs, then read by Sluice (with the txn row in it).
    await deltaProbe('checkpoint', root);
    const fromCheckpoint = await table.snapshot();
    expect(fromCheckpoint.version).toBe(2);
    expect(fromCheckpoint.txnVersion('sluice')).toBe(1n);
    expect(fromCheckpoint.files.length).toBe(snap.files.length + 1);
    const probe = await deltaProbe('read', root);
    expect(probe.rows.map((r: { id: number }) => r.id).sort()).toEqual([1, 2, 3, 4]);
    expect((await deltaProbe('txn', root, 'sluice')).version).toBe(1);
    const engine = await LakeQueryEngine.create();
    const s = await engine.open({ t: { storage: table.storage, snapshot: await table.snapshot() } });
    try {
      expect(await s.queryJson('SELECT big FROM t WHERE id IN (1, 4) ORDER BY id')).toEqual([{ big: '9007199254740993' }, { big: '9007199254740995' }]);
    } finally {
      s.close();
    }
  });

  it('a MERGE whose batch row has a null cluster value reads the files its range cannot rule out (one row per key)', async () => {
    const root = path.join(dir, `t${n++}`);
    const table = await LakeTable.create(new LocalStorage(root), { columns: [{ name: 'k', type: 'string' }, { name: 'h', type: 'long' }, { name: 'v', type: 'long' }] });
    await table.append({ rows: [{ k: 'A', h: 10, v: 1 }, { k: 'B', h: null, v: 1 }, { k: 'C', h: 20, v: 1 }] });
    // The file's h range is [10, 20]: nothing in it says B (h null) is there.
    const r = await table.merge({ source: { rows: [{ k: 'B', h: null, v: 2 }] }, keys: ['k'], versionColumn: 'v', clusterColumn: 'h' });
    expect({ inserted: r.rowsInserted, updated: r.rowsUpdated }).toEqual({ inserted: 0, updated: 1 });
    const engine = await LakeQueryEngine.create();
    const s = await engine.open({ t: await table.currentView() });
    try {
      expect(await s.queryJson('SELECT k, v FROM t ORDER BY k')).toEqual([
        { k: 'A', v: '1' },
        { k: 'B', v: '2' },
        { k: 'C', v: '1' },
      ]);
    } finally {
      s.close();
    }
  });

  it("vacuum keeps a removed file written within the retention, whatever the remove's time says (none, or older than the file)", async () => {
    const { root, table } = await fresh();
    await table.append({ rows: rows(0, 4) });
    const [file] = (await table.snapshot()).files;
    // Another writer's remove without the optional deletionTimestamp (read as 0 before).
    const remove = { remove: { path: file.add.path, dataChange: true } };
    await fs.writeFile(commitFile(root, 2), `${JSON.stringify({ commitInfo: { timestamp: Date.now(), operation: 'DELETE' } })}\n${JSON.stringify(remove)}\n`);
    expect((await table.snapshot()).files.some((f) => f.key === file.key)).toBe(false);
    // The file was written seconds ago: a reader of version 1 may still need it for an hour.
    expect((await table.vacuum({ retentionMs: MIN_VACUUM_RETENTION_MS, nowMs: Date.now() + 60_000, dryRun: true })).filesDeleted).toEqual([]);
    expect((await table.vacuum({ retentionMs: MIN_VACUUM_RETENTION_MS, nowMs: Date.now() + MIN_VACUUM_RETENTION_MS + 60_000, dryRun: true })).filesDeleted).toEqual([file.key]);
  });
});
