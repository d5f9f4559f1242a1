import fc from 'fast-check';
import { parseIsoMillis, utcDate } from './timestamps';

describe('parseIsoMillis', () => {
  it.each([
    ['2026-06-01T12:00:00.123Z', Date.UTC(2026, 5, 1, 12, 0, 0, 123)],
    ['2026-06-01T12:00:00Z', Date.UTC(2026, 5, 1, 12)],
    ['2026-06-01t12:00:00z', Date.UTC(2026, 5, 1, 12)],
    ['2026-06-01T14:00:00.5+02:00', Date.UTC(2026, 5, 1, 12, 0, 0, 500)],
    ['2026-06-01T12:00:00.999999999-00:30', Date.UTC(2026, 5, 1, 12, 30, 0, 999)],
    // RFC 3339 allows any number of fraction digits; more than nine were refused.
    ['2026-06-01T12:00:00.1234567891Z', Date.UTC(2026, 5, 1, 12, 0, 0, 123)],
    ['2026-06-01T14:00:00.123456789012+02:00', Date.UTC(2026, 5, 1, 12, 0, 0, 123)],
    ['2024-02-29T00:00:00.000Z', Date.UTC(2024, 1, 29)],
    ['1970-01-01T00:00:00.000Z', 0],
    ['9999-12-31T23:59:59.999Z', 253_402_300_799_999],
    ['9999-12-31T23:59:59.999+23:59', 253_402_300_799_999 - 86_340_000],
  ])('reads %s', (text, expected) => {
    expect(parseIsoMillis(text)).toBe(expected);
  });

  it.each([
    '2026-06-01T12:00:00', // no zone
    '2026-06-01 12:00:00Z',
    '2025-02-29T00:00:00.000Z', // not a leap year (fast path)
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00.000Z',
    '2026-06-01T24:00:00.000Z',
    '2026-06-01T12:60:00Z',
    '2026-06-01T12:00:60.000Z', // leap second
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:30:00.000+01:00', // an offset moving it before 1970
    '9999-12-31T23:59:59.999-23:59', // or after 9999-12-31T23:59:59.999Z
    '2026-06-01T12:00:00+25:00',
    '2026-06-01T12:00:00.Z',
    '２０２６-06-01T12:00:00.000Z', // full-width digits
    '+02026-06-01T12:00:00Z',
    '2026-06-01T12:00:00.12:Z', // ':' and '/' sit just outside '0'..'9'
    '2026-06-01T12:0/:00.123Z',
    '20:6-06-01T12:00:00.000Z',
    '2026-06-01T12:00:00.1a3Z',
    '',
  ])('rejects %s', (text) => {
    expect(parseIsoMillis(text)).toBeUndefined();
  });

  it('agrees with Date for every canonical UTC timestamp (property test)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) }), (ms) => {
        expect(parseIsoMillis(new Date(ms).toISOString())).toBe(ms);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the UTC date of an instant', () => {
    expect(utcDate(Date.UTC(2026, 5, 1, 23, 59, 59, 999))).toBe('2026-06-01');
  });
});
