import { consumerProperties, nextOffsets } from './consumer';
import type { ConsumedMessage } from './types';

const msg = (partition: number, offset: number, topic = 't'): ConsumedMessage => ({ topic, partition, offset, key: null, value: null, headers: {}, size: 0 });

describe('consumerProperties', () => {
  it('never lets an override turn auto-commit or auto offset store back on', () => {
    const props = consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'], rdkafka: { 'enable.auto.commit': true, 'enable.auto.offset.store': true, 'isolation.level': 'read_uncommitted' } });
    expect(props).toMatchObject({ 'enable.auto.commit': false, 'enable.auto.offset.store': false, 'isolation.level': 'read_committed', 'group.id': 'g' });
  });

  it('postpones fetches past a full prefetch queue by 20 ms, not librdkafka\'s 1 s, unless told otherwise', () => {
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'] })['fetch.queue.backoff.ms']).toBe(20);
    expect(consumerProperties({ brokers: 'a:1', groupId: 'g', topics: ['t'], fetchBackoffMs: 200 })['fetch.queue.backoff.ms']).toBe(200);
  });
});

describe('nextOffsets', () => {
  it('gives the highest offset + 1 per partition, whatever the order', () => {
    expect(nextOffsets([msg(0, 5), msg(1, 2), msg(0, 3), msg(0, 9), msg(1, 1), msg(0, 4, 'u')])).toEqual([
      { topic: 't', partition: 0, offset: 10 },
      { topic: 't', partition: 1, offset: 3 },
      { topic: 'u', partition: 0, offset: 5 },
    ]);
    expect(nextOffsets([])).toEqual([]);
  });
});
