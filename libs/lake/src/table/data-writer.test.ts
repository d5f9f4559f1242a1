import { mapAtMost } from './data-writer';

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('mapAtMost', () => {
  it('runs at most `limit` at once and returns results in the items’ order', async () => {
    const gates = [0, 1, 2, 3, 4].map(() => deferred<void>());
    const started: number[] = [];
    const run = mapAtMost([0, 1, 2, 3, 4], 2, async (i) => {
      started.push(i);
      await gates[i].promise;
      return i * 10;
    });
    await tick();
    expect(started).toEqual([0, 1]);
    gates[1].resolve();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    for (const g of [gates[0], gates[2], gates[3], gates[4]]) g.resolve();
    await expect(run).resolves.toEqual([0, 10, 20, 30, 40]);
  });

  it('starts none after a failure, and throws the first error once the ones under way settle', async () => {
    const slow = deferred<void>();
    const started: number[] = [];
    let slowSettled = false;
    const run = mapAtMost([0, 1, 2, 3], 2, async (i) => {
      started.push(i);
      if (i === 0) {
        await slow.promise;
        slowSettled = true;
        return i;
      }
      throw new Error(`item ${i} failed`);
    });
    let outcome: unknown;
    void run.catch((err: unknown) => (outcome = err));
    await tick();
    expect(outcome).toBeUndefined(); // item 0 is still under way
    slow.resolve();
    await expect(run).rejects.toThrow('item 1 failed');
    expect(slowSettled).toBe(true);
    expect(started).toEqual([0, 1]);
  });

  it('runs one at a time when given a limit under 1', async () => {
    let running = 0;
    let most = 0;
    const results = await mapAtMost([1, 2, 3], 0, async (i) => {
      most = Math.max(most, ++running);
      await tick();
      running--;
      return i;
    });
    expect([results, most]).toEqual([[1, 2, 3], 1]);
  });

  it('returns an empty list for no items', async () => {
    await expect(mapAtMost([], 8, async () => 1)).resolves.toEqual([]);
  });
});
