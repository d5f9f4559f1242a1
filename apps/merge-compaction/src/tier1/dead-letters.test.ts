import { DLQ_TOPIC, HEADERS } from '@sluice/contracts';
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
  it('keeps the original record and adds the DLQ headers (layout: contracts deadLetterHeaders)', async () => {
    const sent: ProducerRecord[] = [];
    const dlq = new DeadLetters(async (records) => sent.push(...records), DLQ_TOPIC.name, () => Date.UTC(2026, 10, 29));
    expect(dlq.add(message(7), 'orders', [{ code: 'AVRO_WRITER_UNKNOWN', path: '', message: 'no such fingerprint' }])).toBe('AVRO_WRITER_UNKNOWN');
    await dlq.flush();
    expect(sent).toHaveLength(1);
    const { topic, key, value, headers } = sent[0];
    expect({ topic, key, value }).toEqual({ topic: DLQ_TOPIC.name, key: Buffer.from('k7'), value: Buffer.from([0xde, 0xad]) });
    expect(headers?.traceparent).toEqual(Buffer.from('00-x'));
    expect([headers?.[HEADERS.dlqReason], headers?.[HEADERS.dlqSourceOffset], headers?.[HEADERS.dlqContract], headers?.[HEADERS.dlqProducer]]).toEqual(['AVRO_WRITER_UNKNOWN', '7', 'orders', 'shop']);
    expect(dlq.size).toBe(0);
  });

  it('keeps records queued, in order, when the write fails, and sends them on the next flush', async () => {
    let fail = true;
    const sent: string[] = [];
    const dlq = new DeadLetters(async (records) => {
      if (fail) throw new Error('broker down');
      sent.push(...records.map((r) => r.headers?.[HEADERS.dlqSourceOffset] as string));
    }, DLQ_TOPIC.name);
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

  it('drops the queued records of partitions no longer owned, and the bytes they held', async () => {
    const sent: string[] = [];
    const dlq = new DeadLetters(async (records) => void sent.push(...records.map((r) => r.headers?.[HEADERS.dlqSourceOffset] as string)), DLQ_TOPIC.name);
    const empty = [{ code: 'MERGE_RECORD_EMPTY', path: '', message: 'x' }];
    dlq.add(message(1), 'orders', empty);
    const one = dlq.heldBytes;
    dlq.add({ ...message(2), partition: 5 }, 'orders', empty);
    dlq.add(message(3), 'orders', empty);
    expect(dlq.dropUnless((p) => p.partition === 2)).toBe(1);
    expect(dlq.size).toBe(2);
    expect(dlq.heldBytes).toBe(2 * one);
    await dlq.flush();
    expect(sent).toEqual(['1', '3']);
    expect(dlq.heldBytes).toBe(0);
  });

  it('caps the detail of a record with many issues', async () => {
    const sent: ProducerRecord[] = [];
    const dlq = new DeadLetters(async (records) => sent.push(...records), DLQ_TOPIC.name);
    dlq.add(message(1), 'orders', Array.from({ length: 2000 }, (_, i) => ({ code: 'EVENT_FIELD_UNKNOWN', path: `/f${i}`, message: 'unknown field' })));
    await dlq.flush();
    expect((sent[0].headers?.[HEADERS.dlqDetail] as string).length).toBeLessThanOrEqual(8 * 1024);
  });
});
