import { timeLeft } from './time-left';

describe('timeLeft', () => {
  it('takes the time since the start off the timeout, rounding up, and never goes below 1 ms', () => {
    const now = performance.now();
    const left = timeLeft(1000, now - 250.5) as number;
    expect(left).toBeGreaterThanOrEqual(740);
    expect(left).toBeLessThanOrEqual(750);
    expect(Number.isInteger(left)).toBe(true);
    expect(timeLeft(100, now - 5000)).toBe(1);
  });

  it('has no deadline to pass on without a timeout', () => {
    expect(timeLeft(undefined, performance.now() - 5000)).toBeUndefined();
  });
});
