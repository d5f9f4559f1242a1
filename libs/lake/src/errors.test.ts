import { LAKE_ERRORS, lakeError } from './errors';

describe('lake error catalog', () => {
  it('codes follow LAKE_<CONDITION> and carry the catalog retryable flag', () => {
    for (const code of Object.keys(LAKE_ERRORS) as (keyof typeof LAKE_ERRORS)[]) {
      expect(code).toMatch(/^LAKE_[A-Z_]+$/);
      expect(lakeError(code, 'm').retryable).toBe(LAKE_ERRORS[code].retryable);
    }
    expect(lakeError('LAKE_COMMIT_CONFLICT', 'm').retryable).toBe(true);
    expect(lakeError('LAKE_LOG_CORRUPT', 'm').retryable).toBe(false);
  });
});
