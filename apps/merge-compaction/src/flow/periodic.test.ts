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
