/**
 * The pipeline's topics as code: what each topic must look like on the cluster.
 * Names, partition counts, retention and cleanup policy come from @sluice/contracts (the one
 * source of truth); replication settings depend on the cluster and are inputs.
 */
import { CONTRACTS, DLQ_TOPIC, RAW_TOPIC, type TopicSpec } from '@sluice/contracts';

/** The desired state of one topic. */
export interface TopicPlan {
  name: string;
  partitions: number;
  replicationFactor: number;
  /** Topic-level configs that must hold exactly these values. */
  configs: Readonly<Record<string, string>>;
}

/** Cluster-dependent settings applied to every topic. */
export interface ClusterSettings {
  /** Replicas per partition: 1 on the local single broker, 3 in production. */
  replicationFactor: number;
  /** `min.insync.replicas`: with acks=all, writes fail (retryably) below this many in-sync replicas. */
  minInsyncReplicas: number;
  /** Prepended to every topic name (isolated test or tenant namespaces); default none. */
  namePrefix?: string;
}

/** Local single-broker defaults. */
export const LOCAL_CLUSTER: ClusterSettings = Object.freeze({ replicationFactor: 1, minInsyncReplicas: 1 });

/** The topic specs of the pipeline, from contracts: the raw topic, one valid topic per contract, the DLQ. */
export function pipelineTopicSpecs(): TopicSpec[] {
  return [RAW_TOPIC, ...Object.values(CONTRACTS).map((c) => c.topic), DLQ_TOPIC];
}

/** Turns topic specs into plans for a cluster. Throws RangeError on an impossible spec. */
export function planTopics(specs: readonly TopicSpec[], cluster: ClusterSettings): TopicPlan[] {
  if (cluster.minInsyncReplicas > cluster.replicationFactor) {
    throw new RangeError(`min.insync.replicas (${cluster.minInsyncReplicas}) exceeds the replication factor (${cluster.replicationFactor}): every write would fail`);
  }
  const seen = new Set<string>();
  return specs.map((spec) => {
    const name = `${cluster.namePrefix ?? ''}${spec.name}`;
    if (seen.has(name)) throw new RangeError(`topic ${name} is declared twice`);
    seen.add(name);
    if (!Number.isInteger(spec.partitions) || spec.partitions < 1) throw new RangeError(`topic ${name}: partitions must be a positive integer`);
    return {
      name,
      partitions: spec.partitions,
      replicationFactor: cluster.replicationFactor,
      configs: {
        'cleanup.policy': spec.cleanupPolicy,
        'retention.ms': String(spec.retentionMs),
        'min.insync.replicas': String(cluster.minInsyncReplicas),
        'message.timestamp.type': spec.timestampType,
      },
    };
  });
}
