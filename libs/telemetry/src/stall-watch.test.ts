import { StallWatch } from './stall-watch';

describe('StallWatch', () => {
  it('is live between steps and while a step runs within the limit', () => {
    let t = 1_000;
    const watch = new StallWatch(5_000, () => t);
    expect(watch.live()).toBe(true);
    expect(watch.running()).toBeUndefined();
    watch.begin('batch');
    t += 5_000;
    expect(watch.live()).toBe(true);
    expect(watch.running()).toEqual({ step: 'batch', forMs: 5_000 });
  });

  it('restarts the clock on progress within a step, and ignores progress between steps', () => {
    let t = 0;
    const watch = new StallWatch(5_000, () => t);
    watch.progress('ignored');
    expect(watch.running()).toBeUndefined();
    watch.begin('batch: poll');
    t = 4_000;
    watch.progress('batch: commit');
    t = 8_000; // 8 s into the step, 4 s into its current call
    expect(watch.live()).toBe(true);
    expect(watch.running()).toEqual({ step: 'batch: commit', forMs: 4_000 });
    t = 9_001;
    expect(watch.live()).toBe(false);
  });

  it('is not live once a step outlives the limit, and live again when a new step starts', () => {
    let t = 0;
    const watch = new StallWatch(5_000, () => t);
    watch.begin('connect');
    t += 5_001;
    expect(watch.live()).toBe(false);
    expect(watch.running()).toEqual({ step: 'connect', forMs: 5_001 });
    watch.label('connect: init transactions');
    expect(watch.running()).toEqual({ step: 'connect: init transactions', forMs: 5_001 });
    watch.end();
    expect(watch.live()).toBe(true);
    t += 60_000; // idle time between steps never counts
    watch.begin('batch');
    expect(watch.live()).toBe(true);
  });
});
