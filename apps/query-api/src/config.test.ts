import { loadQueryApiConfig } from './config';

const base = { QUERY_API_LAKE_ROOT: '/tmp/lake' };
const tokens = (grants: object[]) => ({ ...base, QUERY_API_TOKENS: JSON.stringify(grants) });

describe('query-api config', () => {
  it('refuses a misspelt setting of its own', () => {
    expect(() => loadQueryApiConfig({ ...base, QUERY_API_MAX_ROW: '10' })).toThrow(/did you mean QUERY_API_MAX_ROWS/);
  });
});

describe('query-api config: tokens', () => {
  it('accepts distinct named grants, the longest token the Authorization parser reads included', () => {
    const c = loadQueryApiConfig(tokens([
      { name: 'dash', token: 'dash-token-0123456789', tables: ['silver_orders'] },
      { name: 'ops', token: 'o'.repeat(512), tables: ['*'] },
    ]));
    expect(c.tokens.map((t) => t.name)).toEqual(['dash', 'ops']);
  });

  it.each([
    ['one token for two grants', [{ name: 'a', token: 'shared-token-0123456', tables: ['*'] }, { name: 'b', token: 'shared-token-0123456', tables: ['x'] }], 'shared-token-0123456'],
    ['a token that could never authenticate (too long)', [{ name: 'a', token: 't'.repeat(600), tables: ['*'] }], 't'.repeat(600)],
    ['a token with a space', [{ name: 'a', token: 'token with spaces 0123', tables: ['*'] }], 'token with spaces 0123'],
    ['a name twice', [{ name: 'a', token: 'first-token-0123456789', tables: ['*'] }, { name: 'a', token: 'second-token-012345678', tables: ['*'] }], 'second-token-012345678'],
    ['an unknown field beside the known ones', [{ name: 'a', token: 'some-token-0123456789', tables: ['*'], tabels: ['x'] }], 'some-token-0123456789'],
    ['a name and a token swapped (the token in the name)', [{ name: 'swapped-token-0123456789', token: 'dash', tables: ['*'] }], 'swapped-token-0123456789'],
  ])('refuses %s, without printing the token', (_label, grants, secret) => {
    let message = '';
    try {
      loadQueryApiConfig(tokens(grants));
    } catch (err) {
      message = (err as Error).message;
    }
    // What is wrong, by entry (a typo was reported as only "is invalid"), never the token.
    expect(message).toMatch(/QUERY_API_TOKENS entry \d/);
    expect(message).not.toContain(secret);
  });
});

describe('query-api config: S3 credentials', () => {
  const grants = tokens([{ name: 'dash', token: 'dash-token-0123456789', tables: ['*'] }]);

  it('takes both or neither (an id alone fell back to the SDK default chain without a word)', () => {
    expect(loadQueryApiConfig({ ...grants, QUERY_API_S3_ACCESS_KEY_ID: 'id', QUERY_API_S3_SECRET_ACCESS_KEY: 'secret' }).s3AccessKeyId).toBe('id');
    expect(() => loadQueryApiConfig({ ...grants, QUERY_API_S3_ACCESS_KEY_ID: 'id' })).toThrow(
      'QUERY_API_S3_ACCESS_KEY_ID and QUERY_API_S3_SECRET_ACCESS_KEY must be set together (QUERY_API_S3_SECRET_ACCESS_KEY is empty)',
    );
  });

  it('refuses a secret with a trailing newline, without printing it', () => {
    expect(() => loadQueryApiConfig({ ...grants, QUERY_API_S3_ACCESS_KEY_ID: 'id', QUERY_API_S3_SECRET_ACCESS_KEY: 'secret\n' })).toThrow(
      /QUERY_API_S3_SECRET_ACCESS_KEY must not begin or end with whitespace$/,
    );
  });
});
