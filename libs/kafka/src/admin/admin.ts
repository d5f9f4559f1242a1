import { AdminClient, IsolationLevel, OffsetSpec, type IAdminClient } from '@confluentinc/kafka-javascript';
import { isSluiceError } from '@sluice/errors';
import { baseProperties, callback } from '../connection';
import { kafkaError, translateKafkaError } from '../errors';
import { alterTopicConfigs, describeTopicConfigs, type ConfigEntry, type WireOptions } from './config-protocol';
import { explainUnreachable, wireOptions } from '../wire/connection';
import type { AdminOptions } from './options';
import type { GroupDescription, GroupState, PartitionOffsets, TopicDescription, TopicSpec } from './types';

/**
 * Topic and offset administration: create/describe/list/delete topics, read and alter topic
 * configs, read committed offsets, end offsets and lag. Every failure is a KafkaError.
 */
export class KafkaAdmin {
  private readonly native: IAdminClient;
  private readonly timeoutMs: number;
  private readonly wire: WireOptions;
  private readonly options: AdminOptions;
  private closed = false;

  constructor(options: AdminOptions) {
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.options = options;
    this.native = AdminClient.create(baseProperties(options) as never);
    this.wire = wireOptions(options, this.timeoutMs);
  }

  /**
   * Creates one topic and waits until the broker serves its configs (creation is asynchronous
   * in Kafka: a describe right after create can still say "unknown topic").
   * KAFKA_TOPIC_EXISTS if it already exists.
   */
  async createTopic(spec: TopicSpec): Promise<void> {
    await this.call('admin.createTopic', spec.name, (done) =>
      this.native.createTopic(
        { topic: spec.name, num_partitions: spec.partitions, replication_factor: spec.replicationFactor ?? 1, config: { ...spec.configs } },
        this.timeoutMs,
        done,
      ),
    );
    await this.untilShown(async () => {
      try {
        await describeTopicConfigs(this.wire, [spec.name]);
        return undefined;
      } catch (err) {
        if (!isSluiceError(err, 'KAFKA_TOPIC_NOT_FOUND')) throw err;
        return err;
      }
    });
  }

  /** Deletes topics (each must exist). */
  async deleteTopics(names: readonly string[]): Promise<void> {
    for (const name of names) await this.call('admin.deleteTopic', name, (done) => this.native.deleteTopic(name, this.timeoutMs, done));
  }

  /**
   * Raises a topic's partition count to `total` (Kafka cannot lower it) and waits until the
   * broker's metadata shows them: in KRaft the controller answers first and the broker learns of
   * the new partitions asynchronously. KAFKA_TIMEOUT if they do not show within the request
   * timeout after the controller's answer.
   */
  async createPartitions(name: string, total: number): Promise<void> {
    await this.call('admin.createPartitions', name, (done) => this.native.createPartitions(name, total, this.timeoutMs, done));
    await this.untilShown(async () => {
      const [described] = await this.describeTopics([name]);
      if (described.partitions >= total) return undefined;
      return kafkaError('KAFKA_TIMEOUT', `admin.createPartitions: ${name} still shows ${described.partitions} of ${total} partitions`, {
        details: { operation: 'admin.createPartitions', topic: name, partitions: described.partitions, total },
      });
    });
  }

  /** Names of all topics, internal ones (`__consumer_offsets`…) excluded. */
  async listTopics(): Promise<string[]> {
    const names = await this.call<string[]>('admin.listTopics', undefined, (done) => this.native.listTopics({ timeout: this.timeoutMs }, done));
    return names.filter((n) => !n.startsWith('__')).sort();
  }

  /** Partition count and replication factor of each topic; KAFKA_TOPIC_NOT_FOUND if one is missing. */
  async describeTopics(names: readonly string[]): Promise<TopicDescription[]> {
    if (names.length === 0) return [];
    const described = await this.call<Array<{ name: string; partitions: Array<{ partition: number; leader?: { id?: unknown } | null; replicas: unknown[] }>; error?: unknown }>>(
      'admin.describeTopics',
      names.join(','),
      (done) => this.native.describeTopics([...names], { timeout: this.timeoutMs }, done),
    );
    return described.map((t) => {
      if (t.error) throw translateKafkaError(t.error, { operation: 'admin.describeTopics', topic: t.name });
      const leaderless = t.partitions.filter((p) => typeof p.leader?.id !== 'number' || p.leader.id < 0).map((p) => p.partition);
      return { name: t.name, partitions: t.partitions.length, replicationFactor: t.partitions[0]?.replicas.length ?? 0, leaderlessPartitions: leaderless };
    });
  }

  /** Every config entry of each topic, with where its value comes from. */
  describeTopicConfigs(names: readonly string[]): Promise<Map<string, Record<string, ConfigEntry>>> {
    return describeTopicConfigs(this.wire, names);
  }

  /**
   * Sets the given topic-level configs (other keys untouched) and waits until the broker serves
   * the new values: in KRaft the alter goes through the controller and reaches the broker's
   * config view asynchronously. KAFKA_TIMEOUT if they do not show within the request timeout.
   */
  async alterTopicConfigs(name: string, set: Readonly<Record<string, string>>): Promise<void> {
    await alterTopicConfigs(this.wire, name, set);
    await this.untilShown(async () => {
      const current = (await describeTopicConfigs(this.wire, [name])).get(name) ?? {};
      const stale = Object.entries(set).filter(([key, value]) => current[key]?.value !== value);
      if (stale.length === 0) return undefined;
      return kafkaError('KAFKA_TIMEOUT', `admin.alterTopicConfigs: ${name} still shows old values for ${stale.map(([k]) => k).join(', ')}`, {
        details: { operation: 'admin.alterTopicConfigs', topic: name, keys: stale.map(([k]) => k) },
      });
    });
  }

  /**
   * Waits for a change the controller accepted to show on the broker (KRaft applies it
   * asynchronously): re-reads every 50 ms until `pending()` answers undefined; past the request
   * timeout, throws the last error it answered.
   */
  private async untilShown(pending: () => Promise<Error | undefined>): Promise<void> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const err = await pending();
      if (err === undefined) return;
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * Per partition of `topics`: the group's committed offset, the end offset and the lag.
   * `readCommitted` (default true) measures against the last stable offset, which is what a
   * read_committed consumer can reach.
   */
  async fetchLag(groupId: string, topics: readonly string[], readCommitted = true): Promise<PartitionOffsets[]> {
    const described = await this.call<Array<{ name: string; partitions: Array<{ partition: number }>; error?: unknown }>>(
      'admin.describeTopics',
      topics.join(','),
      (done) => this.native.describeTopics([...topics], { timeout: this.timeoutMs }, done),
    );
    const partitions = described.flatMap((t) => {
      if (t.error) throw translateKafkaError(t.error, { operation: 'admin.fetchLag', topic: t.name });
      return t.partitions.map((p) => ({ topic: t.name, partition: p.partition }));
    });
    const committed = await this.fetchCommittedOffsets(groupId, partitions);
    const ends = await this.listOffsets(partitions, OffsetSpec.LATEST, readCommitted);
    const starts = await this.listOffsets(partitions, OffsetSpec.EARLIEST, readCommitted);
    const out = partitions.map((p) => {
      const k = `${p.topic}:${p.partition}`;
      const c = committed.get(k) ?? null;
      const end = ends.get(k) ?? 0;
      const from = c ?? starts.get(k) ?? 0;
      return { topic: p.topic, partition: p.partition, committed: c, end, lag: Math.max(0, end - from) };
    });
    // Not published as `lag`: this covers every partition of the topics, and each replica of a
    // group asking would report the whole topic's lag again (an alert summing them multiplied it).
    // Consumers publish the lag of the partitions they hold.
    return out;
  }

  /**
   * The group's committed offsets (next offset to read), keyed `topic:partition`; absent = none.
   * Only stable offsets are read: while a transaction that commits offsets for the group is
   * being completed, the broker answers "unstable offsets" for a moment; that is retried here
   * (every 100 ms, within the admin timeout) rather than handed to the caller.
   */
  async fetchCommittedOffsets(
    groupId: string,
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ): Promise<Map<string, number>> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      try {
        return await this.fetchStableOffsets(groupId, partitions);
      } catch (err) {
        const unstable = isSluiceError(err) && err.details.librdkafkaName === 'ERR_UNSTABLE_OFFSET_COMMIT';
        if (!unstable || Date.now() >= deadline) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  private async fetchStableOffsets(groupId: string, partitions: ReadonlyArray<{ topic: string; partition: number }>): Promise<Map<string, number>> {
    const results = await this.call<Array<{ groupId: string; error?: unknown; partitions: Array<{ topic: string; partition: number; offset: number; error?: unknown }> }>>(
      'admin.fetchCommittedOffsets',
      undefined,
      (done) =>
        this.native.listConsumerGroupOffsets([{ groupId, partitions: partitions.map((p) => ({ topic: p.topic, partition: p.partition })) }], { timeout: this.timeoutMs, requireStableOffsets: true }, done),
    );
    const out = new Map<string, number>();
    for (const group of results) {
      if (group.error) throw translateKafkaError(group.error, { operation: 'admin.fetchCommittedOffsets', groupId });
      for (const p of group.partitions) {
        if (p.error) throw translateKafkaError(p.error, { operation: 'admin.fetchCommittedOffsets', topic: p.topic, groupId });
        if (p.offset >= 0) out.set(`${p.topic}:${p.partition}`, p.offset);
      }
    }
    return out;
  }

  /**
   * The group's state and each member's assignment, from its coordinator. A group nobody ever
   * joined is `dead` with no members.
   */
  async describeGroup(groupId: string): Promise<GroupDescription> {
    const result = await this.call<{ groups: NativeGroup[] }>('admin.describeGroup', undefined, (done) =>
      this.native.describeGroups([groupId], { timeout: this.timeoutMs }, done),
    );
    const group = result.groups.find((g) => g.groupId === groupId);
    if (group === undefined) throw kafkaError('KAFKA_UNKNOWN', `admin.describeGroup: no description of ${groupId} in the answer`, { details: { operation: 'admin.describeGroup', groupId } });
    if (group.error) throw translateKafkaError(group.error, { operation: 'admin.describeGroup', groupId });
    return {
      groupId,
      state: GROUP_STATES[group.state] ?? 'unknown',
      members: group.members.map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        assignment: (m.assignment?.topicPartitions ?? []).map((p) => ({ topic: p.topic, partition: p.partition })),
      })),
    };
  }

  /** End offsets of the partitions, keyed `topic:partition` (last stable offset when `readCommitted`). */
  async fetchEndOffsets(partitions: ReadonlyArray<{ topic: string; partition: number }>, readCommitted = true): Promise<Map<string, number>> {
    return this.listOffsets(partitions, OffsetSpec.LATEST, readCommitted);
  }

  /** Earliest offsets still held (after retention or deleteRecords), keyed `topic:partition`. */
  async fetchStartOffsets(partitions: ReadonlyArray<{ topic: string; partition: number }>, readCommitted = true): Promise<Map<string, number>> {
    return this.listOffsets(partitions, OffsetSpec.EARLIEST, readCommitted);
  }

  /** Disconnects. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.native.disconnect();
  }

  private async listOffsets(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
    spec: OffsetSpec,
    readCommitted: boolean,
  ): Promise<Map<string, number>> {
    if (partitions.length === 0) return new Map();
    const results = await this.call<Array<{ topic: string; partition: number; offset: number; error?: unknown }>>('admin.listOffsets', undefined, (done) =>
      this.native.listOffsets(
        partitions.map((p) => ({ topic: p.topic, partition: p.partition, offset: spec })),
        { timeout: this.timeoutMs, isolationLevel: readCommitted ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED },
        done,
      ),
    );
    const out = new Map<string, number>();
    for (const r of results) {
      if (r.error) throw translateKafkaError(r.error, { operation: 'admin.listOffsets', topic: r.topic });
      out.set(`${r.topic}:${r.partition}`, r.offset);
    }
    return out;
  }

  private async call<T = void>(operation: string, topic: string | undefined, run: (done: (err: unknown, value?: T) => void) => void): Promise<T> {
    try {
      return await callback<T>((done) => run((err, value) => done(err, value)));
    } catch (err) {
      throw await explainUnreachable(this.options, translateKafkaError(err, { operation, topic }), this.timeoutMs);
    }
  }
}

/** The parts of the native group description read here. */
interface NativeGroup {
  groupId: string;
  error?: unknown;
  state: number;
  members: Array<{ memberId: string; clientId: string; assignment?: { topicPartitions?: Array<{ topic: string; partition: number }> } }>;
}

// ConsumerGroupStates of the native client, by number.
const GROUP_STATES: Readonly<Record<number, GroupState>> = Object.freeze({
  0: 'unknown',
  1: 'preparing-rebalance',
  2: 'completing-rebalance',
  3: 'stable',
  4: 'dead',
  5: 'empty',
});
