export { SluiceError, isSluiceError, isRetryable } from './sluice-error';
export { type Result, type Issue, ok, fail } from './result';
