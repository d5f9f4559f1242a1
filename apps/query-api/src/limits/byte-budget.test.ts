import { ByteBudget } from './byte-budget';

describe('ByteBudget', () => {
  it('holds reads that fit at once, queues the rest in order, and starts them as bytes come back', async () => {
    const budget = new ByteBudget(100);
    const a = await budget.acquire(60, 1000);
    const b = await budget.acquire(40, 1000);
    const started: string[] = [];
    const c = budget.acquire(50, 1000).then((release) => (started.push('c'), release));
    const d = budget.acquire(10, 1000).then((release) => (started.push('d'), release));
    await new Promise((r) => setImmediate(r));
    // d would fit after c, not before it: first come, first served.
    expect(started).toEqual([]);
    a();
    a(); // idempotent
    const [releaseC, releaseD] = await Promise.all([c, d]);
    expect(started).toEqual(['c', 'd']);
    expect(budget.heldBytes).toBe(100);
    b();
    releaseC();
    releaseD();
    expect(budget.heldBytes).toBe(0);
  });

  it('answers QUERY_SATURATED when a read does not get its turn in time, and lets the reads behind it go', async () => {
    const budget = new ByteBudget(100);
    const a = await budget.acquire(90, 1000);
    const late = budget.acquire(50, 20);
    const small = budget.acquire(10, 1000);
    await expect(late).rejects.toMatchObject({ code: 'QUERY_SATURATED', retryable: true });
    // The small read behind it fits beside the running one once the large one gave up.
    const releaseSmall = await small;
    expect(budget.heldBytes).toBe(100);
    a();
    releaseSmall();
  });

  it('refuses a read that could never fit', () => {
    expect(() => new ByteBudget(10).acquire(11, 1000)).toThrow(RangeError);
  });
});
