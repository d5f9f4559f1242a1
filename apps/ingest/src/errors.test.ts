import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REASON_CODES } from '@sluice/contracts';
import { INGEST_ERRORS } from './errors';
import { INGEST_EVENT_REASONS } from './events/check-event';

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

const doc = readFileSync(path.resolve(__dirname, '../../../docs/design/ingest.md'), 'utf8');

describe('ingest error catalog', () => {
  it('docs/design/ingest.md lists exactly the request error codes with their status and retryable flag', () => {
    const rows = catalogRows(doc, 'ingest-errors');
    expect(rows.map(([code, status, retryable]) => ({ code, status: Number(status), retryable }))).toEqual(
      Object.entries(INGEST_ERRORS).map(([code, e]) => ({ code, status: e.status, retryable: e.retryable ? 'yes' : 'no' })),
    );
  });

  it('lists the ingest-only event reasons, which do not collide with the contracts catalog', () => {
    const rows = catalogRows(doc, 'ingest-event-reasons');
    expect(rows).toEqual(Object.entries(INGEST_EVENT_REASONS).map(([code, meaning]) => [code, meaning]));
    for (const code of Object.keys(INGEST_EVENT_REASONS)) expect(REASON_CODES).not.toContain(code);
  });

  it('every retryable error is one a client can act on later (429/5xx), never a 4xx it must fix', () => {
    for (const e of Object.values(INGEST_ERRORS)) expect(e.retryable).toBe(e.status === 429 || e.status >= 500);
  });
});
