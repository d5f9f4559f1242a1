import { HEADERS } from './topics';
import { deadLetterHeaders, dlqDetail, MAX_DLQ_DETAIL_BYTES } from './dlq';

describe('deadLetterHeaders', () => {
  it('keeps the original headers and adds the sluice-dlq-* headers', () => {
    const headers = deadLetterHeaders(
      { [HEADERS.producer]: Buffer.from('shop'), traceparent: Buffer.from('00-x') },
      { reason: 'RULE_RANGE', issues: [{ code: 'RULE_RANGE', path: '/a', message: 'too big' }], source: { topic: 'raw', partition: 2, offset: 41 }, contract: 'orders', now: Date.UTC(2026, 10, 29) },
    );
    expect(headers).toEqual({
      [HEADERS.producer]: Buffer.from('shop'),
      traceparent: Buffer.from('00-x'),
      [HEADERS.dlqReason]: 'RULE_RANGE',
      [HEADERS.dlqDetail]: JSON.stringify([{ code: 'RULE_RANGE', path: '/a', message: 'too big' }]),
      [HEADERS.dlqSourceTopic]: 'raw',
      [HEADERS.dlqSourcePartition]: '2',
      [HEADERS.dlqSourceOffset]: '41',
      [HEADERS.dlqProducer]: 'shop',
      [HEADERS.dlqTime]: '2026-11-29T00:00:00.000Z',
      [HEADERS.dlqContract]: 'orders',
    });
  });

  it('names the producer unknown and leaves the contract out when they are not known', () => {
    const headers = deadLetterHeaders({}, { reason: 'EVENT_NOT_JSON', issues: [], source: { topic: 'raw', partition: 0, offset: 0 }, now: 0 });
    expect(headers[HEADERS.dlqProducer]).toBe('unknown');
    expect(HEADERS.dlqContract in headers).toBe(false);
  });
});

describe('dlqDetail', () => {
  it('keeps whole issues under the cap and says how many were cut', () => {
    const issues = Array.from({ length: 500 }, (_, i) => ({ code: 'RULE_RANGE', path: `/a/${i}`, message: 'x'.repeat(100) }));
    const detail = dlqDetail(issues);
    expect(Buffer.byteLength(detail)).toBeLessThanOrEqual(MAX_DLQ_DETAIL_BYTES);
    const parsed = JSON.parse(detail);
    expect(parsed[parsed.length - 1].code).toBe('TRUNCATED');
    expect(parsed[0]).toEqual(issues[0]);
  });

  it('cuts a single huge issue', () => {
    const detail = dlqDetail([{ code: 'X', path: '/'.repeat(50_000), message: 'm'.repeat(50_000) }]);
    expect(Buffer.byteLength(detail)).toBeLessThanOrEqual(MAX_DLQ_DETAIL_BYTES);
  });
});
