import { hardExit } from './hard-exit';

/** A telemetry whose log and span flushes finish when the test says so. */
function held() {
  let logged: (() => void) | undefined;
  let exported: (() => void) | undefined;
  const telemetry = {
    logger: { flush: (cb?: (err?: Error) => void) => void (logged = () => cb?.()) },
    flush: () => new Promise<void>((resolve) => (exported = resolve)),
  };
  return { telemetry, log: () => logged?.(), spans: () => exported?.() };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('hardExit', () => {
  it('kills once the log is flushed and the buffered spans exported', async () => {
    const kill = jest.fn();
    const t = held();
    hardExit(t.telemetry, kill);
    t.log();
    await settle();
    expect(kill).not.toHaveBeenCalled(); // spans still on their way
    t.spans();
    await settle();
    expect(kill).toHaveBeenCalled();
  });

  it('kills when the span export fails', async () => {
    const kill = jest.fn();
    hardExit({ logger: { flush: (cb?: (err?: Error) => void) => cb?.() }, flush: () => Promise.reject(new Error('collector down')) }, kill);
    await settle();
    expect(kill).toHaveBeenCalled();
  });

  it('kills within a second when neither flush finishes', () => {
    jest.useFakeTimers();
    try {
      const kill = jest.fn();
      hardExit(held().telemetry, kill);
      jest.advanceTimersByTime(999);
      expect(kill).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(kill).toHaveBeenCalled();
    } finally {
      jest.useRealTimers();
    }
  });
});
