import { randomBytes } from 'node:crypto';
import * as diagnostics from 'node:diagnostics_channel';
import {
  KAFKA_CHANNELS,
  KafkaAdmin,
  KafkaProducer,
  TransactionalProcessor,
  TransactionalProducer,
  type ConsumedMessage,
  type ConsumerOptions,
  type KafkaError,
  type OffsetsCommittedEvent,
  type ProducerRecord,
  type TransactionalProducerOptions,
} from '../src';
import { createTestTopic, pollCount, pollFor, testBrokers, testConsumer, unique, waitForAssignment } from './helpers';

describe('Kafka transactions against the broker', () => {
  const brokers = testBrokers();
  const admin = new KafkaAdmin({ brokers, requestTimeoutMs: 30_000 });
  const closers: Array<() => Promise<void>> = [];

  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await admin.close();
  });

  it('a committed transaction is visible to read_committed consumers, an aborted one is not', async () => {
    const topic = await createTestTopic(admin, 1);
    const producer = new TransactionalProducer({ brokers, transactionalId: unique('tx') });
    closers.push(() => producer.close());
    await producer.connect();

    await producer.begin();
    await producer.produce([1, 2, 3].map((i) => ({ topic, value: `aborted-${i}` })));
    // Into the log first (abort purges what is still queued), so read_committed must hide them.
    await producer.flush();
    await producer.abort();
    await producer.begin();
    await producer.produce([1, 2].map((i) => ({ topic, value: `committed-${i}` })));
    await producer.commit();

    const committedReader = await testConsumer([topic], { isolationLevel: 'read_committed' });
    closers.push(() => committedReader.close());
    // wait for what must arrive, then a little longer to catch anything that must not
    const seen = [...(await pollCount(committedReader, 2)), ...(await pollFor(committedReader, 1_000))];
    expect(seen.map((m) => m.value?.toString())).toEqual(['committed-1', 'committed-2']);

    // the aborted records are in the log: a read_uncommitted reader sees them
    const dirtyReader = await testConsumer([topic], { isolationLevel: 'read_uncommitted' });
    closers.push(() => dirtyReader.close());
    const dirty = await pollCount(dirtyReader, 5);
    expect(dirty.map((m) => m.value?.toString())).toEqual(['aborted-1', 'aborted-2', 'aborted-3', 'committed-1', 'committed-2']);
  });

  it('an open transaction stays invisible to read_committed consumers until it commits', async () => {
    const topic = await createTestTopic(admin, 1);
    const producer = new TransactionalProducer({ brokers, transactionalId: unique('tx') });
    closers.push(() => producer.close());
    await producer.connect();
    await producer.begin();
    await producer.produce([{ topic, value: 'pending' }]);
    const reader = await testConsumer([topic]);
    closers.push(() => reader.close());
    await waitForAssignment(reader);
    expect(await pollFor(reader, 1_500)).toEqual([]);
    await producer.commit();
    const after = await pollCount(reader, 1);
    expect(after.map((m) => m.value?.toString())).toEqual(['pending']);
  });

  /** Ten committed records `v0`…`v9` in `input`. */
  async function seedInput(input: string): Promise<void> {
    const seed = new TransactionalProducer({ brokers, transactionalId: unique('seed') });
    closers.push(() => seed.close());
    await seed.connect();
    await seed.begin();
    await seed.produce(Array.from({ length: 10 }, (_, i) => ({ topic: input, value: `v${i}` })));
    await seed.commit();
  }

  /** Writes `records` without a transaction: no commit markers in the input, so lag 0 is exact. */
  async function sendPlain(records: ProducerRecord[]): Promise<void> {
    const seed = new KafkaProducer({ brokers });
    closers.push(() => seed.close());
    await seed.connect();
    await seed.sendBatch(records);
  }

  /**
   * Everything a new reader of `topic` gets: at least `count` messages, then whatever else arrives
   * within a second (so a duplicate or a leaked record shows).
   */
  async function readAll(topic: string, count: number, extra: Partial<ConsumerOptions> = {}): Promise<ConsumedMessage[]> {
    const reader = await testConsumer([topic], extra);
    closers.push(() => reader.close());
    return [...(await pollCount(reader, count)), ...(await pollFor(reader, 1_000))];
  }

  /** Processes batches until one fails (its error) or the deadline passes (undefined). */
  async function firstFailure(processor: TransactionalProcessor, deadline: number): Promise<unknown> {
    while (Date.now() < deadline) {
      try {
        await processor.processOnce();
      } catch (err) {
        return err;
      }
    }
    return undefined;
  }

  function upperCase(output: string) {
    return (batch: ConsumedMessage[]) => batch.map((m) => ({ topic: output, key: m.key, value: (m.value?.toString() ?? '').toUpperCase() }));
  }

  it('processes consume-transform-produce exactly once: output and offsets commit together', async () => {
    const input = await createTestTopic(admin, 2);
    const output = await createTestTopic(admin, 2);
    const groupId = unique('g');
    await sendPlain(Array.from({ length: 60 }, (_, i) => ({ topic: input, key: `k${i}`, value: `v${i}` })));

    const polled: number[] = [];
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId, topics: [input], maxBatchMessages: 25 },
      producer: { brokers, transactionalId: unique('proc') },
      transform: upperCase(output),
      onPolled: (batch) => polled.push(batch.length),
    });
    closers.push(() => processor.close());
    await processor.connect();
    let done = 0;
    const deadline = Date.now() + 30_000;
    while (done < 60 && Date.now() < deadline) done += (await processor.processOnce()).input;
    expect(done).toBe(60);
    // every non-empty batch was reported once, as polled
    expect(polled.reduce((a, b) => a + b, 0)).toBe(60);
    expect(Math.min(...polled)).toBeGreaterThan(0);

    const lag = await admin.fetchLag(groupId, [input]);
    expect(lag.map((l) => l.lag)).toEqual([0, 0]);
    expect(lag.reduce((n, l) => n + (l.committed ?? 0), 0)).toBe(60);

    const reader = await testConsumer([output]);
    closers.push(() => reader.close());
    const out = await pollCount(reader, 60);
    expect(out.map((m) => m.value?.toString()).sort()).toEqual(Array.from({ length: 60 }, (_, i) => `V${i}`).sort());
    expect(await pollFor(reader, 500)).toEqual([]);
  });

  it('aborts and rewinds when the transform fails: nothing is visible, the batch is processed again', async () => {
    const input = await createTestTopic(admin, 1);
    const output = await createTestTopic(admin, 1);
    await seedInput(input);

    let calls = 0;
    const seenOffsets: number[][] = [];
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId: unique('g'), topics: [input] },
      producer: { brokers, transactionalId: unique('proc') },
      transform: async (batch) => {
        calls++;
        seenOffsets.push(batch.map((m) => m.offset));
        if (calls === 1) {
          // produce part of the output inside the transaction, then fail
          await processor.producer.produce([{ topic: output, value: 'half-done' }]);
          throw new Error('transform exploded');
        }
        return upperCase(output)(batch);
      },
    });
    closers.push(() => processor.close());
    await processor.connect();
    // Offsets are published as committed only with their transaction (they reach the broker at
    // its begin, before the transform that fails here).
    const published: OffsetsCommittedEvent[] = [];
    const onCommitted = (e: unknown) => published.push(e as OffsetsCommittedEvent);
    diagnostics.subscribe(KAFKA_CHANNELS.offsetsCommitted, onCommitted);
    closers.push(async () => void diagnostics.unsubscribe(KAFKA_CHANNELS.offsetsCommitted, onCommitted));
    const deadline = Date.now() + 20_000;
    const failure = await firstFailure(processor, deadline);
    expect((failure as Error).message).toBe('transform exploded');
    expect(published).toEqual([]);
    let processed = 0;
    let commits = 0;
    while (processed < 10 && Date.now() < deadline) {
      const { input } = await processor.processOnce();
      processed += input;
      if (input > 0) commits++;
    }
    expect(processed).toBe(10);
    expect(seenOffsets[1][0]).toBe(seenOffsets[0][0]); // rewound to the failed batch's first offset
    expect(published).toHaveLength(commits);
    expect(published.at(-1)).toMatchObject({ transactional: true, offsets: [{ topic: input, partition: 0, offset: 10 }] });

    const out = await readAll(output, 10);
    expect(out.map((m) => m.value?.toString())).toEqual(Array.from({ length: 10 }, (_, i) => `V${i}`));
  });

  it('a commit that fails after the next batch was fetched ahead rewinds its batch and loses nothing fetched', async () => {
    const input = await createTestTopic(admin, 2);
    const output = await createTestTopic(admin, 2);
    await sendPlain([0, 1].flatMap((partition) => Array.from({ length: 40 }, (_, i) => ({ topic: input, partition, value: `p${partition}-${i}` }))));
    let calls = 0;
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId: unique('g'), topics: [input], maxBatchMessages: 15 },
      producer: { brokers, transactionalId: unique('proc'), unknownTopicTimeoutMs: 500 },
      // The first batch's transaction holds a record for a topic that does not exist: its commit
      // fails (retryable), after the consumer fetched the next batch ahead during that commit.
      transform: (batch) => [...upperCase(output)(batch), ...(++calls === 1 ? [{ topic: unique('no-such-topic'), value: 'undeliverable' }] : [])],
    });
    closers.push(() => processor.close());
    await processor.connect();
    // How many messages each fetch ahead took (librdkafka's positions move past them).
    const consumer = processor.consumer;
    const positions = () => consumer.native.position(consumer.assignment()).reduce((n, p) => n + Math.max(0, p.offset ?? 0), 0);
    const fetchAhead = consumer.fetchAhead.bind(consumer);
    const tookAhead: number[] = [];
    consumer.fetchAhead = async () => {
      const before = positions();
      const taken = await fetchAhead();
      tookAhead.push(positions() - before);
      return taken;
    };
    const deadline = Date.now() + 30_000;
    const failure = (await firstFailure(processor, deadline)) as KafkaError;
    expect(failure).toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND', retryable: true, details: { operation: 'transaction.commit' } });
    // The failed commit had the next batch's messages fetched ahead while it ran.
    expect(tookAhead[0]).toBeGreaterThan(0);
    let processed = 0;
    while (processed < 80 && Date.now() < deadline) processed += (await processor.processOnce()).input;
    expect(processed).toBe(80);
    const out = await readAll(output, 80);
    // Each input exactly once (the output's partitions are the producer's choice: no order across them).
    const expected = [0, 1].flatMap((partition) => Array.from({ length: 40 }, (_, i) => `P${partition}-${i}`));
    expect(out.map((m) => m.value?.toString()).sort()).toEqual(expected.sort());
  });

  // validate starts checking the next batch's records while a transaction commits: only worth it
  // if the batch then holds those very message objects.
  it('hands the messages fetched ahead during a commit to onFetchedAhead, as the objects the next batch holds', async () => {
    const input = await createTestTopic(admin, 1);
    const output = await createTestTopic(admin, 1);
    await sendPlain(Array.from({ length: 200 }, (_, i) => ({ topic: input, partition: 0, value: `v${i}` })));
    const batches: ConsumedMessage[][] = [];
    const aheads: (readonly ConsumedMessage[])[] = [];
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId: unique('g'), topics: [input], maxBatchMessages: 20 },
      producer: { brokers, transactionalId: unique('proc') },
      transform: (batch) => {
        batches.push(batch);
        return upperCase(output)(batch);
      },
      onFetchedAhead: (messages) => {
        aheads.push(messages);
        throw new Error('a hook that throws changes nothing');
      },
    });
    closers.push(() => processor.close());
    await processor.connect();
    let done = 0;
    const deadline = Date.now() + 30_000;
    while (done < 200 && Date.now() < deadline) done += (await processor.processOnce()).input;
    expect(done).toBe(200);
    expect(aheads.length).toBeGreaterThan(0);
    // Each set fetched ahead is in the batch that follows it, as the same objects.
    let matched = 0;
    for (const ahead of aheads) {
      const next = batches.find((b) => b.includes(ahead[0]));
      expect(next).toBeDefined();
      for (const m of ahead) expect(next).toContain(m);
      matched += ahead.length;
    }
    expect(matched).toBeGreaterThan(0);
    expect(batches.flat().map((m) => m.offset)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('rewinds a batch whose onPolled hook threw: the next transaction processes it, nothing is skipped', async () => {
    const input = await createTestTopic(admin, 1);
    const output = await createTestTopic(admin, 1);
    await seedInput(input);
    let polled = 0;
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId: unique('g'), topics: [input] },
      producer: { brokers, transactionalId: unique('proc') },
      transform: upperCase(output),
      onPolled: () => {
        if (++polled === 1) throw new Error('hook exploded');
      },
    });
    closers.push(() => processor.close());
    await processor.connect();
    const deadline = Date.now() + 20_000;
    const failure = await firstFailure(processor, deadline);
    expect((failure as Error).message).toBe('hook exploded');
    let processed = 0;
    while (processed < 10 && Date.now() < deadline) processed += (await processor.processOnce()).input;
    expect(processed).toBe(10);
    const out = await readAll(output, 10);
    expect(out.map((m) => m.value?.toString())).toEqual(Array.from({ length: 10 }, (_, i) => `V${i}`));
  });

  it('run() processes until stop(), and stops with a non-retryable transform error without committing that batch', async () => {
    const input = await createTestTopic(admin, 1);
    const output = await createTestTopic(admin, 1);
    const groupId = unique('g');
    // A producer of its own: the poison event below goes through it too.
    const seed = new KafkaProducer({ brokers });
    closers.push(() => seed.close());
    await seed.connect();
    await seed.sendBatch(Array.from({ length: 5 }, (_, i) => ({ topic: input, value: `v${i}` })));

    let produced = 0;
    const processor = new TransactionalProcessor({
      consumer: { brokers, groupId, topics: [input] },
      producer: { brokers, transactionalId: unique('proc') },
      transform: (batch) => {
        if (batch.some((m) => m.value?.toString() === 'poison')) throw new Error('poison event');
        produced += batch.length;
        if (produced >= 5) setImmediate(() => processor.stop());
        return upperCase(output)(batch);
      },
    });
    closers.push(() => processor.close());
    await processor.connect();
    await processor.run();
    expect(produced).toBe(5);

    await seed.send({ topic: input, value: 'poison' });
    await expect(processor.run()).rejects.toThrow('poison event');
    const lag = await admin.fetchLag(groupId, [input]);
    expect(lag).toEqual([expect.objectContaining({ committed: 5, end: 6, lag: 1 })]);
  });

  it('connects with a transaction timeout below the default delivery timeout (the delivery timeout follows it)', async () => {
    const topic = await createTestTopic(admin);
    const producer = new TransactionalProducer({ brokers, transactionalId: unique('tx'), transactionTimeoutMs: 5_000 });
    // What librdkafka was handed (the producer does not expose it): the 30 s default capped to 5 s.
    const handed = (producer as unknown as { native: { globalConfig: Record<string, unknown> } }).native.globalConfig;
    expect(handed).toMatchObject({ 'transaction.timeout.ms': 5_000, 'message.timeout.ms': 5_000 });
    // librdkafka refuses a delivery timeout longer than the transaction's at connect.
    await expect(producer.connect()).resolves.toBeUndefined();
    try {
      await producer.begin();
      await producer.produce([{ topic, key: 'k', value: 'v' }]);
      await producer.commit();
    } finally {
      await producer.close();
    }
  });

  it('waits out a full local queue inside a transaction: every record lands, in order', async () => {
    const topic = await createTestTopic(admin, 1);
    const producer = await openTransaction({ maxQueueMessages: 50 });
    await producer.produce(Array.from({ length: 400 }, (_, i) => ({ topic, key: 'k', value: `v${i}` })));
    await producer.commit();
    const reader = await testConsumer([topic], { isolationLevel: 'read_committed' });
    closers.push(() => reader.close());
    const seen = await pollCount(reader, 400);
    expect(seen.map((m) => m.value?.toString())).toEqual(Array.from({ length: 400 }, (_, i) => `v${i}`));
  });

  it('fails the commit with the undelivered record\'s own error (retryable: abort, then retry)', async () => {
    const topic = await createTestTopic(admin, 1);
    const producer = await openTransaction({ unknownTopicTimeoutMs: 500 });
    await producer.produce([
      { topic, value: 'kept back' },
      { topic: unique('no-such-topic'), value: 'undeliverable' },
    ]);
    const err = (await producer.commit().catch((e) => e)) as KafkaError;
    // The commit alone would only say "1 message(s) failed delivery"; the report names the cause.
    expect(err).toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND', retryable: true, details: { operation: 'transaction.commit' } });
    expect(err.message).toContain('Unknown topic');
    await expectRetryAlone(producer, topic);
  });

  it('names the rejected record\'s error when a later produce finds the transaction must abort', async () => {
    const topic = await createTestTopic(admin, 1);
    const small = await createTestTopic(admin, 1, { 'max.message.bytes': '1024' });
    const producer = await openTransaction();
    // The broker refuses it (incompressible, over the topic's limit): librdkafka then refuses
    // every further enqueue of the transaction with a bare ERR__STATE.
    await producer.produce([{ topic: small, value: randomBytes(20_000) }]);
    const deadline = Date.now() + 15_000;
    let err: KafkaError | undefined;
    while (err === undefined && Date.now() < deadline) {
      err = await producer.produce([{ topic, value: 'after the failure' }]).then(
        () => undefined,
        (e: KafkaError) => e,
      );
      if (err === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(err).toMatchObject({ code: 'KAFKA_MESSAGE_TOO_LARGE', retryable: false, details: { operation: 'producer.produce' } });
    expect((err?.cause as KafkaError).code).toBe('KAFKA_INVALID_STATE');
    await expectRetryAlone(producer, topic);
  });

  /** A connected transactional producer (closed after the test) with a transaction begun. */
  async function openTransaction(extra: Partial<TransactionalProducerOptions> = {}): Promise<TransactionalProducer> {
    const producer = new TransactionalProducer({ brokers, transactionalId: unique('tx'), ...extra });
    closers.push(() => producer.close());
    await producer.connect();
    await producer.begin();
    return producer;
  }

  /** Aborts the failed transaction and retries in a new one: only the retry is visible. */
  async function expectRetryAlone(producer: TransactionalProducer, topic: string): Promise<void> {
    await producer.abort();
    await producer.begin();
    await producer.produce([{ topic, value: 'retried' }]);
    await producer.commit();
    const seen = await readAll(topic, 1, { isolationLevel: 'read_committed' });
    expect(seen.map((m) => m.value?.toString())).toEqual(['retried']);
  }

  it('refuses a send outside an open transaction with KAFKA_INVALID_STATE', async () => {
    const topic = await createTestTopic(admin, 1);
    const producer = new TransactionalProducer({ brokers, transactionalId: unique('tx') });
    closers.push(() => producer.close());
    await producer.connect();
    await expect(producer.produce([{ topic, value: 'no txn' }])).rejects.toMatchObject({ code: 'KAFKA_INVALID_STATE', retryable: false });
    await expect(producer.commit()).rejects.toMatchObject({ retryable: false });
  });

  it('fences a zombie: a second producer with the same transactional.id makes the first fail with KAFKA_PRODUCER_FENCED', async () => {
    const topic = await createTestTopic(admin, 1);
    const id = unique('tx');
    const zombie = new TransactionalProducer({ brokers, transactionalId: id });
    closers.push(() => zombie.close());
    await zombie.connect();
    await zombie.begin();
    await zombie.produce([{ topic, value: 'zombie' }]);

    const successor = new TransactionalProducer({ brokers, transactionalId: id });
    closers.push(() => successor.close());
    await successor.connect(); // aborts the zombie's open transaction and bumps the epoch

    const err = (await zombie.commit().catch((e) => e)) as KafkaError;
    expect(err.code).toBe('KAFKA_PRODUCER_FENCED');
    expect(err.retryable).toBe(false);

    await successor.begin();
    await successor.produce([{ topic, value: 'successor' }]);
    await successor.commit();
    const seen = await readAll(topic, 1);
    expect(seen.map((m) => m.value?.toString())).toEqual(['successor']);
  });
});
