import type { Storage, StoredObject } from '../storage/storage';
import { listLog, maxOf } from './log-reader';

/** A storage whose listing is `keys` and which is never asked for anything else here. */
function listing(keys: string[]): Storage {
  const objects: StoredObject[] = keys.map((key) => ({ key, size: 1, modifiedMs: 0 }));
  return { uri: 'mem://t', list: async () => objects } as unknown as Storage;
}

const cp = (v: number, part?: number, total?: number) =>
  `_delta_log/${String(v).padStart(20, '0')}.checkpoint${part === undefined ? '' : `.${String(part).padStart(10, '0')}.${String(total).padStart(10, '0')}`}.parquet`;

describe('the log listing', () => {
  // Parts were grouped by version alone, the part count taken from the first key seen: two
  // part-1 files of different counts (a writer that crashed partway and retried with another
  // count) passed as a complete checkpoint, and the adds of the missing parts were not seen.
  it('takes a multi-part checkpoint as complete only when parts 1..n of one count n are all there', async () => {
    const l = await listLog(listing([cp(5, 1, 2), cp(5, 1, 3), cp(7, 1, 2), cp(7, 2, 2), cp(9, 2, 2), cp(9, 2, 3), cp(9, 3, 3)]));
    expect([...l.checkpoints.keys()].sort()).toEqual([7]);
    expect(l.checkpoints.get(7)).toEqual([cp(7, 1, 2), cp(7, 2, 2)]);
  });

  it('prefers a classic checkpoint to parts of the same version, and keeps parts in order', async () => {
    const l = await listLog(listing([cp(3, 2, 2), cp(3, 1, 2), cp(3), cp(4, 3, 3), cp(4, 1, 3), cp(4, 2, 3)]));
    expect(l.checkpoints.get(3)).toEqual([cp(3)]);
    expect(l.checkpoints.get(4)).toEqual([cp(4, 1, 3), cp(4, 2, 3), cp(4, 3, 3)]);
  });

  // Math.max(...versions) overflowed the call stack past ~125k versions (a month of commits).
  it('finds the newest of a long log without spreading it onto the stack', () => {
    const versions = Array.from({ length: 300_000 }, (_, i) => i);
    expect(maxOf(versions)).toBe(299_999);
    expect(maxOf([])).toBe(-1);
  });
});
