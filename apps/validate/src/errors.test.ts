import { readFileSync } from 'node:fs';
import path from 'node:path';
import { VALIDATE_ERRORS } from './errors';

function catalogRows(doc: string, name: string): string[][] {
  const start = doc.indexOf(`<!-- catalog:${name} -->`);
  const end = doc.indexOf(`<!-- /catalog:${name} -->`);
  if (start < 0 || end < 0) throw new Error(`catalog ${name} not found in the doc`);
  return doc
    .slice(start, end)
    .split('\n')
    .filter((l) => /^\| [A-Z_]+ \|/.test(l))
    .map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('validate error catalog', () => {
  it('docs/design/validate.md lists exactly the codes, with the same retryable flag and message', () => {
    const doc = readFileSync(path.resolve(__dirname, '../../../docs/design/validate.md'), 'utf8');
    const rows = catalogRows(doc, 'validate-errors');
    expect(rows.map(([code, retryable, meaning]) => ({ code, retryable, meaning }))).toEqual(
      Object.entries(VALIDATE_ERRORS).map(([code, e]) => ({ code, retryable: e.retryable ? 'yes' : 'no', meaning: e.message })),
    );
  });
});
