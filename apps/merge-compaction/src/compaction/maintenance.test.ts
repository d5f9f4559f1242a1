import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LakeTable, LocalStorage, type LiveFile } from '@sluice/lake';
import { createTelemetry, sampleValue, type Telemetry } from '@sluice/telemetry';
import { MAX_COMPACTION_PAUSE_MS, maintainTable, pauseAfter, planCompaction } from './maintenance';

const file = (bucket: string, size: number, date = '2026-01-01'): LiveFile =>
  ({ path: `${bucket}/${size}`, key: `${bucket}/${size}`, partitionValues: { event_date: date, bucket }, size, modificationTime: 0 }) as unknown as LiveFile;

describe('planCompaction', () => {
  it('picks partitions with enough small files, most first, ignoring big files', () => {
    const files = [file('0', 10), file('0', 20), file('0', 5000), file('1', 1), file('1', 2), file('1', 3), file('2', 1, '2026-01-02')];
    const plan = planCompaction(files, ['event_date', 'bucket'], { minSmallFiles: 2, smallFileBytes: 1000 });
    expect(plan).toEqual([
      { partition: { event_date: '2026-01-01', bucket: '1' }, smallFiles: 3 },
      { partition: { event_date: '2026-01-01', bucket: '0' }, smallFiles: 2 },
    ]);
  });

  it('plans nothing below the threshold', () => {
    expect(planCompaction([file('0', 1)], ['event_date', 'bucket'], { minSmallFiles: 2, smallFileBytes: 1000 })).toEqual([]);
  });
});

describe('pauseAfter (the duty cycle of the compaction role)', () => {
  it('pauses as long as the work at 50 %, three times as long at 25 %, never at 100 % or when unset', () => {
    expect(pauseAfter(200, 50)).toBe(200);
    expect(pauseAfter(200, 25)).toBe(600);
    expect(pauseAfter(200, 100)).toBe(0);
    expect(pauseAfter(200)).toBe(0);
  });

  it('caps the pause, so a huge partition does not stall the pass (or a shutdown) for minutes', () => {
    expect(pauseAfter(60_000, 50)).toBe(MAX_COMPACTION_PAUSE_MS);
    expect(pauseAfter(60_000, 1)).toBe(MAX_COMPACTION_PAUSE_MS);
  });
});

describe('maintainTable metrics (bug: compaction and vacuum metrics counted twice)', () => {
  let dir: string;
  let telemetry: Telemetry;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-maintenance-'));
    telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
  });
  afterAll(async () => {
    await telemetry.shutdown();
    await rm(dir, { recursive: true, force: true });
  });

  /** A fresh table partitioned by a `day` string column, named uniquely. */
  async function dayTable(): Promise<{ name: string; table: LakeTable }> {
    const name = `silver_${randomUUID().replaceAll('-', '')}`;
    const table = await LakeTable.create(
      new LocalStorage(join(dir, name)),
      { name, columns: [{ name: 'id', type: 'long' }, { name: 'day', type: 'string' }], partitionColumns: ['day'] },
      { name, scratchDir: dir },
    );
    return { name, table };
  }

  /** Compacts any partition with 2+ files under 1 MiB, vacuums with retention 0. */
  const options = () => ({
    minSmallFiles: 2,
    smallFileBytes: 1024 * 1024,
    targetFileBytes: 1024 * 1024,
    retentionMs: 0,
    unsafeShortRetention: true,
    vacuum: true,
    logger: telemetry.logger,
    metrics: telemetry.metrics,
  });

  it('records compaction, vacuum and commit metrics once: libs/telemetry already records them from libs/lake events', async () => {
    const { name, table } = await dayTable();
    for (let i = 0; i < 3; i++) await table.append({ rows: [{ id: i, day: '2026-01-01' }] });

    const outcome = await maintainTable(table, options());
    expect(outcome).toMatchObject({ partitionsCompacted: 1, filesRemoved: 3, conflicts: 0 });
    expect(outcome.filesVacuumed).toBeGreaterThan(0);

    const text = await telemetry.metricsText();
    expect(sampleValue(text, 'sluice_merge_compaction_compacted_files_total', { table: name })).toBe(3);
    expect(sampleValue(text, 'sluice_merge_compaction_vacuumed_files_total', { table: name })).toBe(outcome.filesVacuumed);
    expect(sampleValue(text, 'sluice_merge_compaction_commit_duration_seconds_count', { table: name, operation: 'OPTIMIZE' })).toBe(1);
    // create + 3 appends + 1 compaction, each published once by libs/lake.
    expect(sampleValue(text, 'sluice_merge_compaction_commits_total', { table: name, outcome: 'ok' })).toBe(5);
  });

  it('with a deadline already passed compacts one partition, says unfinished and leaves vacuum for the call that finishes', async () => {
    const { table } = await dayTable();
    for (let i = 0; i < 6; i++) await table.append({ rows: [{ id: i, day: `2026-01-0${1 + (i % 3)}` }] });
    const first = await maintainTable(table, options(), undefined, performance.now() - 1);
    expect(first).toEqual({ partitionsCompacted: 1, filesRemoved: 2, conflicts: 0, filesVacuumed: 0, unfinished: true });
    const rest = await maintainTable(table, options());
    expect(rest).toMatchObject({ partitionsCompacted: 2, filesRemoved: 4, unfinished: false });
    expect(rest.filesVacuumed).toBeGreaterThan(0);
    expect((await table.snapshot()).files).toHaveLength(3);
  });

  it('reports progress after each file written, each partition and the vacuum (the compaction role\'s liveness heartbeat)', async () => {
    const { table } = await dayTable();
    for (let i = 0; i < 6; i++) await table.append({ rows: [{ id: i, day: `2026-01-0${1 + (i % 3)}` }] });
    let beats = 0;
    const outcome = await maintainTable(table, { ...options(), onProgress: () => (beats += 1) });
    expect(outcome.partitionsCompacted).toBe(3);
    expect(beats).toBe(3 + 3 + 1); // a file in each partition, each partition, the vacuum
  });

  // A partition is one commit: a large one's pass went without a beat from its first bin to its
  // commit, and a backlog partition past the stall limit restarted the process, pass after pass.
  it('reports progress between the bins of one partition', async () => {
    const { table } = await dayTable();
    for (let i = 0; i < 4; i++) await table.append({ rows: [{ id: i, day: '2026-01-01' }] });
    const largest = Math.max(...(await table.snapshot()).files.map((f) => f.size));
    let beats = 0;
    const outcome = await maintainTable(table, { ...options(), targetFileBytes: 2 * largest, onProgress: () => (beats += 1) });
    expect(outcome).toMatchObject({ partitionsCompacted: 1, filesRemoved: 4 });
    expect((await table.snapshot()).files).toHaveLength(2);
    expect(beats).toBe(2 + 1 + 1); // two files, the partition, the vacuum
  });

  // The failing partition has the most small files, so it is planned first every pass: it ended
  // each pass before any other partition, or the vacuum, ran.
  it('passes over a partition that fails and compacts the others, then reports the failure', async () => {
    const { table } = await dayTable();
    for (let i = 0; i < 3; i++) await table.append({ rows: [{ id: i, day: '2026-01-01' }] });
    for (let i = 0; i < 4; i++) await table.append({ rows: [{ id: 10 + i, day: `2026-01-0${2 + (i % 2)}` }] });
    const broken = (await table.snapshot()).files.find((f) => f.partitionValues.day === '2026-01-01')!;
    await rm(join((table.storage as LocalStorage).root, broken.key));
    let beats = 0;
    await expect(maintainTable(table, { ...options(), onProgress: () => (beats += 1) })).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
    const days = (await table.snapshot()).files.map((f) => f.partitionValues.day).sort();
    expect(days).toEqual(['2026-01-01', '2026-01-01', '2026-01-01', '2026-01-02', '2026-01-03']);
    expect(beats).toBe(2 + 3 + 1); // the two partitions' files, three partitions, the vacuum
    // Out of time after the failing partition (planned first): the failure is still reported.
    await expect(maintainTable(table, options(), undefined, performance.now() - 1)).rejects.toMatchObject({ code: 'LAKE_DATA_FILE_MISSING' });
  });
});
