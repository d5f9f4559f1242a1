import { hardExit } from './hard-exit';

describe('hardExit', () => {
  it('kills after the log is flushed', () => {
    const kill = jest.fn();
    let flushed: (() => void) | undefined;
    hardExit({ flush: (cb?: (err?: Error) => void) => (flushed = () => cb?.()) }, kill);
    expect(kill).not.toHaveBeenCalled();
    flushed?.();
    expect(kill).toHaveBeenCalled();
  });

  it('kills within a second when the flush never calls back', () => {
    jest.useFakeTimers();
    try {
      const kill = jest.fn();
      hardExit({ flush: () => undefined }, kill);
      jest.advanceTimersByTime(999);
      expect(kill).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(kill).toHaveBeenCalled();
    } finally {
      jest.useRealTimers();
    }
  });
});
