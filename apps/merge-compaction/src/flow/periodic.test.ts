import { createTelemetry } from '@sluice/telemetry';
import { Periodic } from './periodic';

const telemetry = createTelemetry({ service: 'merge-compaction', logLevel: 'silent' });
const logger = telemetry.logger;
afterAll(() => telemetry.shutdown());

/** Jobs the tests started, stopped after each test even when it failed (a running job never ends). */
const started: Periodic[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((job) => job.stop()));
});

/** A Periodic with a long interval whose ticks are recorded (ms since the test started). */
function recorder(tickMs = 0) {
  const t0 = performance.now();
  const ticks: number[] = [];
  const job = new Periodic(
    'test',
    60_000,
    async () => {
      ticks.push(performance.now() - t0);
      if (tickMs > 0) await new Promise((resolve) => setTimeout(resolve, tickMs));
      return false;
    },
    logger,
    1_000,
  );
  started.push(job);
  return { job, ticks };
}

const until = async (condition: () => boolean, timeoutMs = 5_000) => {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('Periodic.tickRunningMs', () => {
  it('grows while a tick runs, whether it returns or throws, and is 0 between ticks', async () => {
    let release!: (fail: boolean) => void;
    let ticks = 0;
    const job = new Periodic('test', 60_000, () => new Promise<boolean>((resolve, reject) => {
      ticks += 1;
      release = (fail) => (fail ? reject(new Error('step failed')) : resolve(false));
    }), logger, 60_000);
    started.push(job);
    expect(job.tickRunningMs).toBe(0);
    job.start();
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(job.tickRunningMs).toBeGreaterThanOrEqual(100);
    release(true); // a failed tick waits out its back-off: not a running tick
    await until(() => job.failures === 1);
    expect(job.tickRunningMs).toBe(0);
    job.wake();
    await until(() => ticks === 2, 2_000);
    release(false);
    await until(() => job.tickRunningMs === 0, 2_000);
  });
});

describe('Periodic.wake', () => {
  it('ends the interval wait: the next tick runs at once, not after the 60 s interval', async () => {
    const { job, ticks } = recorder();
    job.start();
    await until(() => ticks.length === 1);
    job.wake();
    await until(() => ticks.length === 2, 2_000);
    await job.stop();
    expect(ticks).toHaveLength(2);
  });

  it('during a tick, runs the next one as soon as it returns (the new work is not missed)', async () => {
    const { job, ticks } = recorder(200);
    job.start();
    await until(() => ticks.length === 1);
    job.wake(); // the first tick is still running
    await until(() => ticks.length === 2, 2_000);
    expect(ticks[1] - ticks[0]).toBeGreaterThanOrEqual(190);
    await job.stop();
  });

  it('without a wake it waits out the interval, and stop ends the wait', async () => {
    const { job, ticks } = recorder();
    job.start();
    await until(() => ticks.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopped = performance.now();
    await job.stop();
    expect(performance.now() - stopped).toBeLessThan(1_000);
    expect(ticks).toHaveLength(1);
  });
});
