import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REASON_CODES, REASONS, httpStatusOf } from './reasons';

// The catalog is an API: ingest answers its statuses and DLQ dashboards count its codes.
describe('reason code catalog', () => {
  it('uses <AREA>_<CONDITION> codes with 4xx statuses', () => {
    for (const code of REASON_CODES) {
      expect(code).toMatch(/^(CONTRACT|EVENT|SCHEMA|RULE|AVRO)_[A-Z0-9_]+$/);
      expect(httpStatusOf(code)).toBeGreaterThanOrEqual(400);
      expect(httpStatusOf(code)).toBeLessThan(500);
    }
  });

  it('is documented row for row in docs/design/contracts.md', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'design', 'contracts.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([A-Z0-9_]+)` \| (\d{3}) \| (.+) \|$/gm)].map((m) => ({ code: m[1], status: Number(m[2]), message: m[3] }));
    expect(rows).toEqual(REASON_CODES.map((code) => ({ code, status: REASONS[code].status, message: REASONS[code].message })));
  });
});
