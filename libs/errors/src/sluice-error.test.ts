import { SluiceError, isRetryable, isSluiceError } from './sluice-error';

describe('SluiceError', () => {
  it('keeps code, retryable flag and cause through JSON', () => {
    const cause = new Error('socket hang up');
    const err = new SluiceError('LAKE_STORAGE_UNAVAILABLE', 'put failed', { retryable: true, cause, details: { key: 'a' } });
    const json = JSON.parse(JSON.stringify(err));
    expect(json).toMatchObject({
      code: 'LAKE_STORAGE_UNAVAILABLE',
      retryable: true,
      message: 'put failed',
      details: { key: 'a' },
      cause: { name: 'Error', message: 'socket hang up' },
    });
    expect(err.cause).toBe(cause);
  });

  it('is not retryable unless said so, and unknown errors are not retryable', () => {
    expect(isRetryable(new SluiceError('X_Y', 'm'))).toBe(false);
    expect(isRetryable(new Error('plain'))).toBe(false);
    expect(isRetryable(new SluiceError('X_Y', 'm', { retryable: true }))).toBe(true);
  });

  it('matches codes', () => {
    const err = new SluiceError('A_B', 'm');
    expect(isSluiceError(err)).toBe(true);
    expect(isSluiceError(err, 'A_B')).toBe(true);
    expect(isSluiceError(err, 'A_C')).toBe(false);
    expect(isSluiceError(new Error('x'))).toBe(false);
  });
});
