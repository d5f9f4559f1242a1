import { KafkaAdmin, type KafkaError } from '../src';
import { pollCount, testBrokers, testConsumer, unique } from './helpers';

describe('KafkaAdmin against the broker', () => {
  const brokers = testBrokers();
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  afterAll(() => admin.close());

  it('creates, lists, describes and deletes a topic', async () => {
    const name = unique('adm');
    await admin.createTopic({ name, partitions: 3, configs: { 'retention.ms': '3600000', 'cleanup.policy': 'compact' } });
    expect(await admin.listTopics()).toContain(name);
    expect(await admin.describeTopics([name])).toEqual([{ name, partitions: 3, replicationFactor: 1, leaderlessPartitions: [] }]);

    const configs = (await admin.describeTopicConfigs([name])).get(name);
    expect(configs?.['retention.ms']).toMatchObject({ value: '3600000', source: 'DYNAMIC_TOPIC_CONFIG', isTopicOverride: true });
    expect(configs?.['cleanup.policy']).toMatchObject({ value: 'compact', isTopicOverride: true });
    expect(configs?.['min.insync.replicas']).toMatchObject({ value: '1', isTopicOverride: false });

    await admin.deleteTopics([name]);
    const deadline = Date.now() + 10_000;
    while ((await admin.listTopics()).includes(name) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await admin.listTopics()).not.toContain(name);
  });

  it('alters topic configs incrementally and raises the partition count', async () => {
    const name = unique('adm');
    await admin.createTopic({ name, partitions: 1, configs: { 'retention.ms': '3600000' } });
    await admin.alterTopicConfigs(name, { 'retention.ms': '7200000', 'min.insync.replicas': '1' });
    const configs = (await admin.describeTopicConfigs([name])).get(name);
    expect(configs?.['retention.ms'].value).toBe('7200000');
    expect(configs?.['min.insync.replicas'].isTopicOverride).toBe(true);
    await admin.createPartitions(name, 4);
    expect((await admin.describeTopics([name]))[0].partitions).toBe(4);
  });

  it('reports typed errors: existing topic, missing topic, invalid config', async () => {
    const name = unique('adm');
    await admin.createTopic({ name, partitions: 1 });
    const exists = (await admin.createTopic({ name, partitions: 1 }).catch((e) => e)) as KafkaError;
    expect(exists).toMatchObject({ code: 'KAFKA_TOPIC_EXISTS', retryable: false });

    const missing = `missing-${unique('x')}`;
    await expect(admin.describeTopics([missing])).rejects.toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND', retryable: true });
    await expect(admin.describeTopicConfigs([missing])).rejects.toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND' });
    await expect(admin.alterTopicConfigs(name, { 'retention.ms': 'not-a-number' })).rejects.toMatchObject({ code: 'KAFKA_INVALID_CONFIG', retryable: false });
    await expect(admin.alterTopicConfigs(name, { 'no.such.config': '1' })).rejects.toMatchObject({ code: 'KAFKA_INVALID_CONFIG' });
    await expect(admin.createTopic({ name: unique('adm'), partitions: 0 })).rejects.toMatchObject({ code: 'KAFKA_INVALID_CONFIG' });
  });

  it('describes a consumer group: state, members and what each member holds', async () => {
    const topic = unique('adm');
    await admin.createTopic({ name: topic, partitions: 2 });
    const groupId = unique('g');
    expect(await admin.describeGroup(groupId)).toEqual({ groupId, state: 'dead', members: [] });

    const consumer = await testConsumer([topic], { groupId, clientId: 'described-member' });
    try {
      const deadline = Date.now() + 30_000;
      while (consumer.assignment().length < 2 && Date.now() < deadline) await pollCount(consumer, 1, 500);
      const described = await admin.describeGroup(groupId);
      expect(described.state).toBe('stable');
      expect(described.members).toHaveLength(1);
      expect(described.members[0].clientId).toBe('described-member');
      expect(described.members[0].assignment.sort((a, b) => a.partition - b.partition)).toEqual([
        { topic, partition: 0 },
        { topic, partition: 1 },
      ]);
    } finally {
      await consumer.close();
    }
    expect(await admin.describeGroup(groupId)).toMatchObject({ state: 'empty', members: [] });
  });
});
