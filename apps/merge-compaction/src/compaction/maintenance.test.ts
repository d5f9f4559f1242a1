import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LakeTable, LocalStorage, type LiveFile } from '@sluice/lake';
import { createTelemetry, sampleValue, type Telemetry } from '@sluice/telemetry';
import { maintainTable, planCompaction } from './maintenance';

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

  it('records compaction, vacuum and commit metrics once: libs/telemetry already records them from libs/lake events', async () => {
    const name = `silver_${randomUUID().replaceAll('-', '')}`;
    const table = await LakeTable.create(
      new LocalStorage(join(dir, name)),
      { name, columns: [{ name: 'id', type: 'long' }, { name: 'day', type: 'string' }], partitionColumns: ['day'] },
      { name, scratchDir: dir },
    );
    for (let i = 0; i < 3; i++) await table.append({ rows: [{ id: i, day: '2026-01-01' }] });

    const outcome = await maintainTable(table, {
      minSmallFiles: 2,
      smallFileBytes: 1024 * 1024,
      targetFileBytes: 1024 * 1024,
      retentionMs: 0,
      vacuum: true,
      logger: telemetry.logger,
      metrics: telemetry.metrics,
    });
    expect(outcome).toMatchObject({ partitionsCompacted: 1, filesRemoved: 3, conflicts: 0 });
    expect(outcome.filesVacuumed).toBeGreaterThan(0);

    const text = await telemetry.metricsText();
    expect(sampleValue(text, 'sluice_merge_compaction_compacted_files_total', { table: name })).toBe(3);
    expect(sampleValue(text, 'sluice_merge_compaction_vacuumed_files_total', { table: name })).toBe(outcome.filesVacuumed);
    expect(sampleValue(text, 'sluice_merge_compaction_commit_duration_seconds_count', { table: name, operation: 'OPTIMIZE' })).toBe(1);
    // create + 3 appends + 1 compaction, each published once by libs/lake.
    expect(sampleValue(text, 'sluice_merge_compaction_commits_total', { table: name, outcome: 'ok' })).toBe(5);
  });
});
