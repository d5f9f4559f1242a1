import { HEADERS } from '@sluice/contracts';
import type { ConsumedMessage, ProducerRecord } from '@sluice/kafka';
import { DeadLetters } from './dead-letters';

const message = (offset: number): ConsumedMessage => ({
  topic: 'sluice.orders.valid',
  partition: 2,
  offset,
  key: Buffer.from(`k${offset}`),
  value: Buffer.from([0xde, 0xad]),
  headers: { [HEADERS.producer]: Buffer.from('shop'), traceparent: Buffer.from('00-x') },
  size: 2,
});

describe('DeadLetters', () => {
  it('keeps the original record and adds the DLQ headers', async () => {
    const sent: ProducerRecord[] = [];
    const dlq = new DeadLetters(async (records) => sent.push(...records), 'sluice.dlq', () => Date.UTC(2026, 10, 29));
    dlq.add(message(7), 'orders', [{ code: 'AVRO_WRITER_UNKNOWN', path: '', message: 'no such fingerprint' }]);
    await dlq.flush();
    expect(sent).toEqual([
      {
        topic: 'sluice.dlq',
        key: Buffer.from('k7'),
        value: Buffer.from([0xde, 0xad]),
        headers: {
          [HEADERS.producer]: Buffer.from('shop'),
          traceparent: Buffer.from('00-x'),
          [HEADERS.dlqReason]: 'AVRO_WRITER_UNKNOWN',
          [HEADERS.dlqDetail]: JSON.stringify([{ code: 'AVRO_WRITER_UNKNOWN', path: '', message: 'no such fingerprint' }]),
          [HEADERS.dlqSourceTopic]: 'sluice.orders.valid',
          [HEADERS.dlqSourcePartition]: '2',
          [HEADERS.dlqSourceOffset]: '7',
          [HEADERS.dlqContract]: 'orders',
          [HEADERS.dlqProducer]: 'shop',
          [HEADERS.dlqTime]: '2026-11-29T00:00:00.000Z',
        },
      },
    ]);
    expect(dlq.size).toBe(0);
  });

  it('keeps records queued, in order, when the write fails, and sends them on the next flush', async () => {
    let fail = true;
    const sent: string[] = [];
    const dlq = new DeadLetters(async (records) => {
      if (fail) throw new Error('broker down');
      sent.push(...records.map((r) => r.headers?.[HEADERS.dlqSourceOffset] as string));
    }, 'sluice.dlq');
    dlq.add(message(1), 'orders', [{ code: 'MERGE_RECORD_EMPTY', path: '', message: 'x' }]);
    dlq.add(message(2), 'orders', [{ code: 'MERGE_RECORD_EMPTY', path: '', message: 'x' }]);
    await expect(dlq.flush()).rejects.toThrow('broker down');
    dlq.add(message(3), 'orders', [{ code: 'MERGE_RECORD_EMPTY', path: '', message: 'x' }]);
    expect(dlq.size).toBe(3);
    fail = false;
    await dlq.flush();
    expect(sent).toEqual(['1', '2', '3']);
    expect(dlq.size).toBe(0);
  });

  it('caps the detail of a record with many issues', async () => {
    const sent: ProducerRecord[] = [];
    const dlq = new DeadLetters(async (records) => sent.push(...records), 'sluice.dlq');
    dlq.add(message(1), 'orders', Array.from({ length: 2000 }, (_, i) => ({ code: 'EVENT_FIELD_UNKNOWN', path: `/f${i}`, message: 'unknown field' })));
    await dlq.flush();
    expect((sent[0].headers?.[HEADERS.dlqDetail] as string).length).toBeLessThanOrEqual(8 * 1024);
  });
});
