import diagnostics from 'node:diagnostics_channel';
import { Writable } from 'node:stream';
import { CHANNELS } from './channels';
import { checkExposition, parseExposition } from './exposition';
import { type Telemetry, createTelemetry } from './telemetry';

function sink(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, stream };
}

function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const match = parseExposition(text).samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return match?.value;
}

const publish = (name: string, payload: unknown) => diagnostics.channel(name).publish(payload);

describe('metrics from adapter channels', () => {
  let t: Telemetry;
  let logs: ReturnType<typeof sink>;
  beforeEach(() => {
    logs = sink();
    t = createTelemetry({ service: 'merge-compaction', logDestination: logs.stream, traces: { kind: 'memory' } });
  });
  afterEach(() => t.shutdown());

  it('turns kafka and lake events into catalog series with the right labels', async () => {
    publish(CHANNELS.kafkaLag, { groupId: 'g', topic: 'orders.valid', partition: 3, lag: 42 });
    publish(CHANNELS.kafkaLag, { groupId: 'g', topic: 'orders.valid', partition: 3, lag: 17 });
    publish(CHANNELS.kafkaLag, { groupId: 'g', topic: 'orders.valid', partition: 4, lag: 5 });
    const parts = (...ps: number[]) => ps.map((partition) => ({ topic: 'orders.valid', partition }));
    publish(CHANNELS.kafkaPaused, { clientId: 'c1', groupId: 'g', partitions: parts(3, 4, 5) });
    publish(CHANNELS.kafkaPaused, { clientId: 'c1', groupId: 'g', partitions: parts(3) }); // twice is still one
    publish(CHANNELS.kafkaResumed, { clientId: 'c1', groupId: 'g', partitions: parts(5) });
    publish(CHANNELS.kafkaRevoked, { clientId: 'c1', groupId: 'g', partitions: parts(4) });
    publish(CHANNELS.lakeCommit, { table: 'orders_silver', version: 12, operation: 'MERGE', attempts: 2, durationMs: 250, actions: {} });
    publish(CHANNELS.lakeConflict, { table: 'orders_silver', version: 12, operation: 'MERGE', outcome: 'retry' });
    publish(CHANNELS.lakeConflict, { table: 'orders_silver', version: 12, operation: 'MERGE', outcome: 'concurrent-delete' });
    publish(CHANNELS.lakeMerge, { table: 'orders_silver', version: 12, filesRead: 3, bytesRead: 10, filesRewritten: 2, bytesRewritten: 4096, durationMs: 900 });
    publish(CHANNELS.lakeCompaction, { table: 'orders_silver', version: 13, filesRemoved: 30, bytesRemoved: 1, filesAdded: 1, bytesAdded: 1, durationMs: 2000 });
    publish(CHANNELS.lakeVacuum, { table: 'orders_silver', filesDeleted: 7, bytesDeleted: 1, durationMs: 10 });
    publish(CHANNELS.lakeCheckpointFailed, { table: 'orders_silver', version: 20, code: 'LAKE_STORAGE_UNAVAILABLE', message: 'x' });
    publish(CHANNELS.lakeTableStats, { table: 'orders_silver', files: 90, smallFiles: 31, compactionBacklog: 28 });
    publish(CHANNELS.kafkaClientError, { clientId: 'c1', code: 'KAFKA_BROKER_DOWN', retryable: true, message: 'x' });

    const text = await t.metricsText();
    const p = 'sluice_merge_compaction';
    expect(value(text, `${p}_consumer_lag_messages`, { topic: 'orders.valid', partition: '3' })).toBe(17);
    // Revoked partitions drop to zero lag so a stale value cannot keep an alert firing.
    expect(value(text, `${p}_consumer_lag_messages`, { topic: 'orders.valid', partition: '4' })).toBe(0);
    // Paused 3,4,5; resumed 5; revoked 4 → only 3 stays paused.
    expect(value(text, `${p}_paused_partitions_partitions`, { topic: 'orders.valid' })).toBe(1);
    expect(value(text, `${p}_table_version`, { table: 'orders_silver' })).toBe(12);
    expect(value(text, `${p}_table_data_files`, { table: 'orders_silver' })).toBe(90);
    expect(value(text, `${p}_table_small_files`, { table: 'orders_silver' })).toBe(31);
    expect(value(text, `${p}_compaction_backlog_files`, { table: 'orders_silver' })).toBe(28);
    expect(value(text, `${p}_commits_total`, { table: 'orders_silver', outcome: 'ok' })).toBe(1);
    expect(value(text, `${p}_commits_total`, { table: 'orders_silver', outcome: 'retry' })).toBe(1);
    expect(value(text, `${p}_commits_total`, { table: 'orders_silver', outcome: 'conflict' })).toBe(1);
    expect(value(text, `${p}_commit_duration_seconds_count`, { table: 'orders_silver', operation: 'MERGE' })).toBe(1);
    expect(value(text, `${p}_commit_duration_seconds_sum`, { table: 'orders_silver', operation: 'MERGE' })).toBeCloseTo(0.25);
    // 0.25 s falls in the le="0.25" bucket and not below it.
    expect(value(text, `${p}_commit_duration_seconds_bucket`, { operation: 'MERGE', le: '0.1' })).toBe(0);
    expect(value(text, `${p}_commit_duration_seconds_bucket`, { operation: 'MERGE', le: '0.25' })).toBe(1);
    expect(value(text, `${p}_merge_rewritten_bytes_total`, { table: 'orders_silver' })).toBe(4096);
    expect(value(text, `${p}_merge_duration_seconds_sum`, { table: 'orders_silver' })).toBeCloseTo(0.9);
    expect(value(text, `${p}_compacted_files_total`, { table: 'orders_silver' })).toBe(30);
    expect(value(text, `${p}_vacuumed_files_total`, { table: 'orders_silver' })).toBe(7);
    expect(value(text, `${p}_checkpoint_failures_total`, { table: 'orders_silver', code: 'LAKE_STORAGE_UNAVAILABLE' })).toBe(1);
    expect(value(text, `${p}_kafka_client_errors_total`, { code: 'KAFKA_BROKER_DOWN', retryable: 'true' })).toBe(1);
    const last = value(text, `${p}_last_commit_timestamp_seconds`, { table: 'orders_silver' }) as number;
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(60);
    expect(text).toMatch(/# TYPE sluice_merge_compaction_commits_total counter/);
    expect(text).toMatch(/# TYPE sluice_merge_compaction_commit_duration_seconds histogram/);

    const check = checkExposition(text, 'merge-compaction');
    expect(check.problems).toEqual([]);
    expect(check.seen).toContain(`${p}_consumer_lag_messages`);
  });

  it('dates a table\'s last commit from the snapshots it loads too, and never back', async () => {
    // Bug: last_commit was set only by this process's own commits, so after a restart the series
    // did not exist until one landed and an alert on its age could not fire for a stuck table.
    const hourAgo = Date.now() - 3_600_000;
    publish(CHANNELS.lakeTableStats, { table: 'bronze_x', version: 7, committedAtMs: hourAgo, files: 1, smallFiles: 1, compactionBacklog: 0 });
    const p = 'sluice_merge_compaction';
    expect(value(await t.metricsText(), `${p}_last_commit_timestamp_seconds`, { table: 'bronze_x' })).toBeCloseTo(hourAgo / 1000);
    publish(CHANNELS.lakeCommit, { table: 'bronze_x', version: 8, operation: 'WRITE', attempts: 1, durationMs: 5, actions: {} });
    // A snapshot loaded before that commit, published after it, does not move the time back.
    publish(CHANNELS.lakeTableStats, { table: 'bronze_x', version: 7, committedAtMs: hourAgo, files: 1, smallFiles: 1, compactionBacklog: 0 });
    const last = value(await t.metricsText(), `${p}_last_commit_timestamp_seconds`, { table: 'bronze_x' }) as number;
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(60);
  });

  it('measures transactions and produce acks in the services that own them', async () => {
    const v = createTelemetry({ service: 'validate', logDestination: sink().stream });
    try {
      publish(CHANNELS.kafkaTransactionCommitted, { transactionalId: 'x', inputCount: 10, outputCount: 10, latencyMs: 30 });
      publish(CHANNELS.kafkaTransactionAborted, { transactionalId: 'x', inputCount: 10, outputCount: 0, latencyMs: 5, code: 'KAFKA_FENCED' });
      publish(CHANNELS.kafkaProduceAcked, { clientId: 'p', count: 100, bytes: 1000, latencyMs: 8 });
      publish(CHANNELS.kafkaProduceFailed, { clientId: 'p', count: 100, failed: 3, code: 'KAFKA_TIMEOUT' });
      publish(CHANNELS.kafkaProducerQueue, { clientId: 'p', depth: 250 });
      const text = await v.metricsText();
      expect(value(text, 'sluice_validate_transaction_duration_seconds_count', { outcome: 'committed' })).toBe(1);
      expect(value(text, 'sluice_validate_transaction_duration_seconds_count', { outcome: 'aborted' })).toBe(1);
      // validate's messages wait inside transactions (its commit waits for them, a failed one
      // aborts it): no queue gauge, no per-send ack series a dashboard would show empty.
      expect(text).not.toContain('producer_queue');
      expect(text).not.toContain('produce_duration');
      expect(text).not.toContain('produce_failed_messages');
      expect(checkExposition(text, 'validate').problems).toEqual([]);
      // merge-compaction runs no Kafka transactions: the same events leave no series there.
      const mc = await t.metricsText();
      expect(mc).not.toContain('transaction_duration');
      expect(mc).not.toContain('produce_duration');
    } finally {
      await v.shutdown();
    }
    const ingest = createTelemetry({ service: 'ingest', logDestination: sink().stream });
    try {
      publish(CHANNELS.kafkaProducerQueue, { clientId: 'p', depth: 250 });
      publish(CHANNELS.kafkaProduceAcked, { clientId: 'p', count: 100, bytes: 1000, latencyMs: 8 });
      publish(CHANNELS.kafkaProduceFailed, { clientId: 'p', count: 100, failed: 3, code: 'KAFKA_TIMEOUT' });
      const text = await ingest.metricsText();
      expect(value(text, 'sluice_ingest_producer_queue_messages')).toBe(250);
      expect(value(text, 'sluice_ingest_produce_duration_seconds_count')).toBe(1);
      expect(value(text, 'sluice_ingest_produce_failed_messages_total', { code: 'KAFKA_TIMEOUT' })).toBe(3);
    } finally {
      await ingest.shutdown();
    }
  });

  it('records a lake.commit span under the active span', async () => {
    await t.withSpan('merge.batch', async () => {
      publish(CHANNELS.lakeCommit, { table: 'orders_bronze', version: 1, operation: 'WRITE', attempts: 1, durationMs: 5 });
    });
    const spans = t.finishedSpans();
    const batch = spans.find((s) => s.name === 'merge.batch');
    const commit = spans.find((s) => s.name === 'lake.commit');
    expect(commit?.parentSpanId).toBe(batch?.spanId);
    expect(commit?.traceId).toBe(batch?.traceId);
    expect(commit?.attributes['sluice.table']).toBe('orders_bronze');
  });

  it('drops hostile payloads without throwing into the publisher and warns once per channel', async () => {
    const hostile: unknown[] = [
      null, 7, 'x', {}, { topic: 'a', partition: -1, lag: 1 }, { topic: 'a', partition: 1.5, lag: 1 },
      { topic: 'a', partition: 1, lag: Number.NaN }, { topic: '', partition: 1, lag: 1 },
      { topic: 'a'.repeat(1000), partition: 1, lag: 1 }, { topic: { toString: () => 'x' }, partition: 1, lag: 1 },
    ];
    for (const h of hostile) expect(() => publish(CHANNELS.kafkaLag, h)).not.toThrow();
    expect(() => publish(CHANNELS.lakeCommit, { table: 't', version: -1, operation: 'WRITE', durationMs: 1 })).not.toThrow();
    expect(() => publish(CHANNELS.kafkaPaused, { clientId: 'c', partitions: [{ topic: 'a', partition: 1 }, null] })).not.toThrow();
    // Give an uncaught subscriber error (rethrown on nextTick by diagnostics_channel) a chance to surface.
    await new Promise((r) => setImmediate(r));
    const text = await t.metricsText();
    expect(text).not.toContain('consumer_lag');
    expect(text).not.toContain('commits_total');
    expect(text).not.toContain('paused_partitions');
    await t.flush();
    await new Promise((r) => setTimeout(r, 20));
    const warnings = logs.lines.filter((l) => l.msg === 'dropped a malformed telemetry event (reported once per channel)');
    expect(warnings.map((w) => w.channel).sort()).toEqual(['sluice:kafka:lag', 'sluice:kafka:paused', 'sluice:lake:commit']);
  });

  it('stops listening after shutdown', async () => {
    expect(diagnostics.channel(CHANNELS.lakeTableStats).hasSubscribers).toBe(true);
    await t.shutdown();
    expect(diagnostics.channel(CHANNELS.lakeTableStats).hasSubscribers).toBe(false);
    await expect(t.shutdown()).resolves.toBeUndefined();
  });
});

describe('direct recording', () => {
  it('keeps only catalog labels and ignores metrics the service does not emit', async () => {
    const t = createTelemetry({ service: 'ingest', logDestination: sink().stream });
    t.metrics.eventsIn.add(3, { outcome: 'accepted' });
    // An extra label is dropped so it cannot explode cardinality.
    t.metrics.eventsIn.add(2, { outcome: 'accepted', event_id: 'e-1' } as never);
    t.metrics.eventsIn.add(-5, { outcome: 'accepted' });
    t.metrics.eventsIn.add(Number.NaN, { outcome: 'accepted' });
    t.metrics.producerQueue.set(9);
    t.metrics.httpRequestDuration.record(0.012, { method: 'POST', route: '/v1/events', status: 202 });
    t.metrics.consumerLag.set(5, { topic: 't', partition: 0 }); // ingest has no consumer
    const text = await t.metricsText();
    expect(value(text, 'sluice_ingest_events_in_total', { outcome: 'accepted' })).toBe(5);
    expect(text).not.toContain('event_id');
    expect(value(text, 'sluice_ingest_producer_queue_messages')).toBe(9);
    expect(value(text, 'sluice_ingest_http_request_duration_seconds_count', { method: 'POST', route: '/v1/events', status: '202' })).toBe(1);
    expect(text).not.toContain('consumer_lag');
    expect(checkExposition(text, 'ingest').problems).toEqual([]);
    await t.shutdown();
  });

  it('rejects an unknown service and a bad sample ratio', () => {
    expect(() => createTelemetry({ service: 'billing' as never })).toThrow(/TELEMETRY|unknown service/);
    expect(() => createTelemetry({ service: 'ingest', traceSampleRatio: 2 })).toThrow(/0\.\.1/);
  });
});
