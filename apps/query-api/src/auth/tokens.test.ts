import { TokenAuth } from './tokens';

const auth = new TokenAuth([
  { name: 'dash', token: 'dashboard-token-0123456789', tables: ['orders_silver'] },
  { name: 'admin', token: 'admin-token-0123456789abc', tables: ['*'] },
]);

describe('TokenAuth', () => {
  it('maps a token to its read scopes', () => {
    const dash = auth.authenticate('Bearer dashboard-token-0123456789');
    expect(dash.name).toBe('dash');
    expect(dash.canRead('orders_silver')).toBe(true);
    expect(dash.canRead('orders_bronze')).toBe(false);
    expect(auth.authenticate('bearer admin-token-0123456789abc').canRead('anything')).toBe(true);
  });

  it.each([
    [undefined, 'QUERY_AUTH_MISSING'],
    ['', 'QUERY_AUTH_MISSING'],
    ['Basic dXNlcjpwYXNz', 'QUERY_AUTH_INVALID'],
    ['Bearer ', 'QUERY_AUTH_INVALID'],
    ['Bearer dashboard-token-012345678', 'QUERY_AUTH_INVALID'], // one character short
    ['Bearer dashboard-token-0123456789x', 'QUERY_AUTH_INVALID'],
    ['Bearer dashboard-token-0123456789 extra', 'QUERY_AUTH_INVALID'],
    [`Bearer ${'x'.repeat(600)}`, 'QUERY_AUTH_INVALID'],
  ])('refuses %p', (header, code) => {
    expect(() => auth.authenticate(header)).toThrow(expect.objectContaining({ code }));
  });
});
