import diagnostics from 'node:diagnostics_channel';
import { BatchConsumer, KAFKA_CHANNELS, KafkaAdmin, KafkaProducer, type KafkaError, type ProduceAckedEvent } from '../src';
import { createTestTopic, pollCount, testBrokers, unique } from './helpers';

// A port nothing listens on: connection refused immediately.
const DEAD_BROKER = '127.0.0.1:1';

describe('error translation and events against real clients', () => {
  const brokers = testBrokers();

  it('rejects a consumer without topics before creating any client', () => {
    expect(() => new BatchConsumer({ brokers, groupId: unique('g'), topics: [] })).toThrow(RangeError);
  });

  it('a producer pointed at a dead broker fails connect with a typed retryable error', async () => {
    const producer = new KafkaProducer({ brokers: DEAD_BROKER });
    const err = (await producer.connect(2_000).catch((e) => e)) as KafkaError;
    await producer.close();
    expect(['KAFKA_BROKER_UNREACHABLE', 'KAFKA_TIMEOUT']).toContain(err.code);
    expect(err.retryable).toBe(true);
    expect(err.cause).toBeDefined();
    expect(err.details.operation).toBe('producer.connect');
  });

  it('a consumer pointed at a dead broker fails connect with a typed retryable error', async () => {
    const consumer = new BatchConsumer({ brokers: DEAD_BROKER, groupId: unique('g'), topics: ['x'] });
    const err = (await consumer.connect(2_000).catch((e) => e)) as KafkaError;
    await consumer.close();
    expect(['KAFKA_BROKER_UNREACHABLE', 'KAFKA_TIMEOUT']).toContain(err.code);
    expect(err.retryable).toBe(true);
  });

  it('an invalid subscription fails connect with KAFKA_INVALID_CONFIG and leaves no client running', async () => {
    const consumer = new BatchConsumer({ brokers, groupId: unique('g'), topics: ['^[unclosed-regex'] });
    await expect(consumer.connect()).rejects.toMatchObject({ code: 'KAFKA_INVALID_CONFIG', retryable: false });
    await consumer.close();
    expect(consumer.native.isConnected()).toBe(false);
  });

  it('admin config requests to a dead broker fail with KAFKA_BROKER_UNREACHABLE', async () => {
    const admin = new KafkaAdmin({ brokers: DEAD_BROKER, requestTimeoutMs: 2_000 });
    try {
      await expect(admin.describeTopicConfigs(['x'])).rejects.toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true });
      await expect(admin.listTopics()).rejects.toMatchObject({ retryable: true });
    } finally {
      await admin.close();
    }
  });

  it('a message larger than the topic accepts fails with KAFKA_MESSAGE_TOO_LARGE (not retryable)', async () => {
    const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
    const producer = new KafkaProducer({ brokers, compression: 'none' });
    try {
      await producer.connect();
      const topic = await createTestTopic(admin, 1, { 'max.message.bytes': '2000' });
      const err = (await producer.send({ topic, value: Buffer.alloc(50_000, 1) }).catch((e) => e)) as KafkaError;
      expect(err.code).toBe('KAFKA_MESSAGE_TOO_LARGE');
      expect(err.retryable).toBe(false);
    } finally {
      await producer.close();
      await admin.close();
    }
  });

  it('publishes produce, batch, assign and lag events on diagnostics channels', async () => {
    const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
    const producer = new KafkaProducer({ brokers, clientId: 'events-test' });
    const seen: Record<string, object[]> = {};
    const listeners = Object.values(KAFKA_CHANNELS).map((name) => {
      const listener = (message: unknown) => void (seen[name] ??= []).push(message as object);
      diagnostics.subscribe(name, listener);
      return () => diagnostics.unsubscribe(name, listener);
    });
    try {
      await producer.connect();
      const topic = await createTestTopic(admin, 1);
      await producer.sendBatch([1, 2, 3].map((i) => ({ topic, value: `${i}` })));
      const acked = seen[KAFKA_CHANNELS.produceAcked] as ProduceAckedEvent[];
      expect(acked.some((e) => e.clientId === 'events-test' && e.count === 3 && e.bytes === 3 && e.latencyMs >= 0)).toBe(true);

      const reader = new BatchConsumer({ brokers, groupId: unique('g'), topics: [topic], clientId: 'events-test' });
      await reader.connect();
      await pollCount(reader, 3);
      await reader.close();
      expect(seen[KAFKA_CHANNELS.assigned]).toContainEqual(expect.objectContaining({ partitions: [{ topic, partition: 0 }] }));
      expect(seen[KAFKA_CHANNELS.consumerBatch]).toContainEqual(expect.objectContaining({ clientId: 'events-test', count: 3 }));
      expect(seen[KAFKA_CHANNELS.lag]).toContainEqual(expect.objectContaining({ topic, partition: 0, lag: 0 }));
      expect(seen[KAFKA_CHANNELS.revoked]).toContainEqual(expect.objectContaining({ partitions: [{ topic, partition: 0 }] }));
    } finally {
      for (const off of listeners) off();
      await producer.close();
      await admin.close();
    }
  });
});
