import { pipelineTopicSpecs, planTopics } from './plan';

describe('planTopics', () => {
  it('plans the pipeline topics from contracts: raw, one valid topic per contract, DLQ', () => {
    const plans = planTopics(pipelineTopicSpecs(), { replicationFactor: 3, minInsyncReplicas: 2 });
    const names = plans.map((p) => p.name);
    expect(names[0]).toMatch(/raw/);
    expect(names[names.length - 1]).toMatch(/dlq/);
    expect(names.filter((n) => n.endsWith('.valid')).length).toBeGreaterThanOrEqual(1);
    expect(new Set(names).size).toBe(names.length);
    for (const p of plans) {
      expect(p.configs['min.insync.replicas']).toBe('2');
      expect(p.replicationFactor).toBe(3);
      expect(Number(p.configs['retention.ms'])).toBeGreaterThan(0);
    }
    // The raw topic's timestamps are the broker's: validate judges time rules by them.
    expect(plans.map((p) => p.configs['message.timestamp.type'])).toEqual(plans.map((p) => (p.name === 'sluice.raw' ? 'LogAppendTime' : 'CreateTime')));
    expect(() => planTopics(pipelineTopicSpecs(), { replicationFactor: 1, minInsyncReplicas: 2 })).toThrow(RangeError);
  });

  it('rejects duplicate names and non-positive partition counts', () => {
    const spec = { name: 'a', partitions: 1, retentionMs: 1, cleanupPolicy: 'delete' as const, timestampType: 'CreateTime' as const };
    expect(() => planTopics([spec, spec], { replicationFactor: 1, minInsyncReplicas: 1 })).toThrow(/declared twice/);
    expect(() => planTopics([{ ...spec, partitions: 0 }], { replicationFactor: 1, minInsyncReplicas: 1 })).toThrow(/positive integer/);
    expect(planTopics([spec], { replicationFactor: 1, minInsyncReplicas: 1, namePrefix: 'x.' })[0].name).toBe('x.a');
  });
});
