import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { ERROR_CATALOG, queryError } from './errors';

// The catalog, the design note's table and the error objects must agree.
const DOC = path.resolve(__dirname, '../../../docs/design/query-api.md');

function documentedRows(): Map<string, { status: number; retryable: boolean }> {
  const rows = new Map<string, { status: number; retryable: boolean }>();
  for (const line of readFileSync(DOC, 'utf8').split('\n')) {
    const m = /^\| (QUERY_[A-Z_]+) \| (\d{3}) \| (yes|no) \|/.exec(line);
    if (m) rows.set(m[1], { status: Number(m[2]), retryable: m[3] === 'yes' });
  }
  return rows;
}

describe('error catalog', () => {
  it('is documented row for row in docs/design/query-api.md', () => {
    const documented = documentedRows();
    const catalog = new Map(Object.entries(ERROR_CATALOG).map(([code, e]) => [code, { status: e.status, retryable: e.retryable }]));
    expect(documented).toEqual(catalog);
  });

  it('codes are QUERY_<CONDITION>, 5xx-but-not-500 ones retryable, client errors not', () => {
    for (const [code, e] of Object.entries(ERROR_CATALOG)) {
      expect(code).toMatch(/^QUERY_[A-Z]+(_[A-Z]+)*$/);
      if (e.status < 500) expect(e.retryable).toBe(false);
      if (e.status === 503 || e.status === 504) expect(e.retryable).toBe(true);
    }
  });

  it('builds SluiceErrors that carry the catalog flag and survive JSON', () => {
    const e = queryError('QUERY_SATURATED', 'busy', { retryAfterSeconds: 1 });
    expect(JSON.parse(JSON.stringify(e))).toMatchObject({ code: 'QUERY_SATURATED', retryable: true, details: { retryAfterSeconds: 1 } });
    expect(e.message).toBe(`${ERROR_CATALOG.QUERY_SATURATED.message}: busy`);
  });
});
