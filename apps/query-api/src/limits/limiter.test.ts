import { isSluiceError } from '@sluice/errors';
import { Limiter } from './limiter';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('Limiter', () => {
  it('runs at most maxConcurrent tasks, queues up to maxQueued and refuses the rest at once', async () => {
    const limiter = new Limiter(2, 1, 10_000);
    const gates = [deferred(), deferred(), deferred()];
    let running = 0;
    let peak = 0;
    const task = (i: number) => () => {
      running++;
      peak = Math.max(peak, running);
      return gates[i].promise.then(() => {
        running--;
        return i;
      });
    };
    const p0 = limiter.run(task(0));
    const p1 = limiter.run(task(1));
    const p2 = limiter.run(task(2));
    await expect(limiter.run(task(0))).rejects.toMatchObject({ code: 'QUERY_SATURATED', retryable: true });
    expect(limiter.inFlight).toBe(2);
    expect(limiter.queued).toBe(1);
    gates[0].resolve();
    gates[1].resolve();
    gates[2].resolve();
    expect(await Promise.all([p0, p1, p2])).toEqual([0, 1, 2]);
    expect(peak).toBe(2);
    expect(limiter.inFlight).toBe(0);
  });

  it('gives up on a queued task after maxWaitMs', async () => {
    const limiter = new Limiter(1, 5, 30);
    const gate = deferred();
    const first = limiter.run(() => gate.promise);
    const err = await limiter.run(async () => 1).catch((e: unknown) => e);
    expect(isSluiceError(err, 'QUERY_SATURATED')).toBe(true);
    expect(limiter.queued).toBe(0);
    gate.resolve();
    await first;
    expect(await limiter.run(async () => 7)).toBe(7);
  });

  it('releases its slot when a task throws', async () => {
    const limiter = new Limiter(1, 0, 10);
    await expect(limiter.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limiter.run(async () => 'ok')).toBe('ok');
  });
});
