import { producerProperties } from './producer';

describe('producerProperties', () => {
  it('keeps the durability and partitioning invariants over any override', () => {
    const props = producerProperties({
      brokers: ['a:1', ' b:2 '],
      rdkafka: { acks: 0, 'enable.idempotence': false, partitioner: 'consistent_random', 'socket.keepalive.enable': true },
    });
    expect(props).toMatchObject({
      acks: 'all',
      'enable.idempotence': true,
      partitioner: 'murmur2_random',
      'bootstrap.servers': 'a:1,b:2',
      'socket.keepalive.enable': true,
      'compression.codec': 'lz4',
      'queue.buffering.max.messages': 100_000,
    });
  });

  it('rejects an empty broker list', () => {
    expect(() => producerProperties({ brokers: ' , ' })).toThrow(RangeError);
  });
});
