import { loadQueryApiConfig } from './config';

const base = { QUERY_API_LAKE_ROOT: '/tmp/lake' };
const tokens = (grants: object[]) => ({ ...base, QUERY_API_TOKENS: JSON.stringify(grants) });

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
  ])('refuses %s, without printing the token', (_label, grants, secret) => {
    let message = '';
    try {
      loadQueryApiConfig(tokens(grants));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/QUERY_API_TOKENS is invalid/);
    expect(message).not.toContain(secret);
  });
});
