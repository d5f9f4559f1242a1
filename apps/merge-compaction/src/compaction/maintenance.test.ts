import type { LiveFile } from '@sluice/lake';
import { planCompaction } from './maintenance';

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
