import type { ViewSpec } from '@sluice/lake';
import { consistentCurrentView } from './lake-adapter';

/** A current view whose tail holds `tail` (file paths) and has removed `removed`; `table` (t<n>) tells the views apart, n is the tail's version. */
const view = (table: string, tail: string[], removed: string[] = []): ViewSpec =>
  ({ snapshot: { table, version: 100 }, pending: { snapshot: { version: Number(table.slice(1)), files: tail.map((path) => ({ path })), tombstones: removed.map((path) => ({ path })) } } }) as never;
/** A current view at table version `version` whose tail is empty (a view then has no `pending`). */
const noTail = (table: string, version: number): ViewSpec => ({ snapshot: { table, version } }) as never;

/** A table whose successive currentView() calls return `views` in turn. */
function tableOf(views: ViewSpec[]) {
  let i = 0;
  return { name: 'silver_orders', calls: () => i, currentView: async () => views[Math.min(i++, views.length - 1)] };
}

describe('consistentCurrentView', () => {
  it('pairs the first table snapshot with the second tail when no fold came between', async () => {
    const t = tableOf([view('t1', ['a']), view('t2', ['a', 'b'])]);
    const v = await consistentCurrentView(t);
    expect(v.snapshot).toMatchObject({ table: 't1' });
    expect(v.pending?.snapshot.files.map((f) => f.path)).toEqual(['a', 'b']);
  });

  it('reads again after a fold replaced the tail, then pairs the next two reads', async () => {
    // The fold between reads 1 and 2 removed tail file 'a'; reads 2 and 3 agree.
    const t = tableOf([view('t1', ['a']), view('t2', ['c']), view('t3', ['c', 'd'])]);
    const v = await consistentCurrentView(t);
    expect(v.snapshot).toMatchObject({ table: 't2' });
    expect(v.pending?.snapshot.files.map((f) => f.path)).toEqual(['c', 'd']);
    expect(t.calls()).toBe(3);
  });

  // A batch appended to the tail after the first read (its txn in the first table snapshot) and
  // folded before the second: its file is in neither tail, and only the second tail's new
  // remove shows it. Pairing them answered with offsets whose rows it did not read.
  it('reads again when a fold between the reads removed a tail file the first read never saw', async () => {
    const t = tableOf([view('t1', ['a']), view('t2', ['a'], ['b']), view('t3', ['a', 'c'], ['b'])]);
    const v = await consistentCurrentView(t);
    expect(v.snapshot).toMatchObject({ table: 't2' });
    expect(v.pending?.snapshot.files.map((f) => f.path)).toEqual(['a', 'c']);
    expect(t.calls()).toBe(3);
  });

  // The same with an empty tail at both reads: the fold that took the batch emptied the tail,
  // and a view leaves an empty tail out, with its removes. The table's version tells.
  it('reads again when the table changed between two reads that saw no tail', async () => {
    const t = tableOf([noTail('t1', 7), noTail('t2', 9), noTail('t3', 9)]);
    const v = await consistentCurrentView(t);
    expect(v.snapshot).toMatchObject({ table: 't2', version: 9 });
    expect(t.calls()).toBe(3);
    const same = tableOf([noTail('t1', 7), noTail('t2', 7)]);
    expect((await consistentCurrentView(same)).snapshot).toMatchObject({ table: 't1' });
  });

  it('gives up with a retryable error, not a view whose offsets may run ahead of its rows', async () => {
    // Every read sees a tail the next one no longer has.
    const t = tableOf(Array.from({ length: 20 }, (_, i) => view(`t${i}`, [`f${i}`])));
    await expect(consistentCurrentView(t)).rejects.toMatchObject({ code: 'LAKE_STORAGE_UNAVAILABLE', retryable: true });
    expect(t.calls()).toBe(9);
  });
});
