import { Backoff, sleep } from './backoff';
import { BackpressureController } from './backpressure';

describe('BackpressureController', () => {
  it('pauses at the byte limit and resumes only below the hysteresis mark', () => {
    const c = new BackpressureController({ maxBufferedBytes: 100, resumeFraction: 0.5 });
    expect(c.setBuffered(99)).toBe('flowing');
    expect(c.setBuffered(100)).toBe('paused-memory');
    expect(c.setBuffered(60)).toBe('paused-memory');
    expect(c.setBuffered(50)).toBe('flowing');
    expect(c.setBuffered(60)).toBe('flowing');
  });

  it('stays paused while storage fails, whatever the buffer', () => {
    const c = new BackpressureController({ maxBufferedBytes: 100 });
    c.setBuffered(0);
    expect(c.storageFailed()).toBe('paused-storage');
    expect(c.setBuffered(0)).toBe('paused-storage');
    expect(c.paused).toBe(true);
    expect(c.storageRecovered()).toBe('flowing');
  });
});

describe('Backoff', () => {
  it('grows exponentially with jitter up to the cap and resets', () => {
    const b = new Backoff(100, 1000, () => 1);
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).toEqual([100, 200, 400, 800, 1000]);
    expect(b.failures).toBe(5);
    b.reset();
    expect(b.next()).toBe(100);
    const low = new Backoff(100, 1000, () => 0);
    expect(low.next()).toBe(50);
  });

  it('sleep resolves early on abort', async () => {
    const ac = new AbortController();
    const started = Date.now();
    const p = sleep(10_000, ac.signal);
    ac.abort();
    await p;
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
