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

  it('pins the channel names adapters publish on', () => {
    expect(Object.values(CHANNELS).sort()).toEqual([
      'sluice:kafka:consumer-lag',
      'sluice:kafka:paused-partitions',
      'sluice:kafka:produce-error',
      'sluice:kafka:producer-queue',
      'sluice:kafka:transaction-commit',
      'sluice:lake:compaction-backlog',
      'sluice:lake:commit',
      'sluice:lake:table-stats',
    ].sort());
  });

  it('turns kafka and lake events into catalog series with the right labels', async () => {
    publish(CHANNELS.kafkaConsumerLag, { topic: 'orders.valid', partition: 3, lag: 42 });
    publish(CHANNELS.kafkaConsumerLag, { topic: 'orders.valid', partition: 3, lag: 17 });
    publish(CHANNELS.kafkaPausedPartitions, { topic: 'orders.valid', count: 2 });
    publish(CHANNELS.lakeCommit, { table: 'orders_silver', tier: 'silver', version: 12, durationMs: 250, outcome: 'ok' });
    publish(CHANNELS.lakeCommit, { table: 'orders_silver', tier: 'silver', durationMs: 40, outcome: 'conflict' });
    publish(CHANNELS.lakeTableStats, { table: 'orders_silver', files: 90, smallFiles: 31 });
    publish(CHANNELS.lakeCompactionBacklog, { table: 'orders_silver', files: 31 });

    const text = await t.metricsText();
    const p = 'sluice_merge_compaction';
    expect(value(text, `${p}_consumer_lag_messages`, { topic: 'orders.valid', partition: '3' })).toBe(17);
    expect(value(text, `${p}_paused_partitions_partitions`, { topic: 'orders.valid' })).toBe(2);
    expect(value(text, `${p}_table_version`, { table: 'orders_silver' })).toBe(12);
    expect(value(text, `${p}_table_data_files`, { table: 'orders_silver' })).toBe(90);
    expect(value(text, `${p}_table_small_files`, { table: 'orders_silver' })).toBe(31);
    expect(value(text, `${p}_compaction_backlog_files`, { table: 'orders_silver' })).toBe(31);
    expect(value(text, `${p}_commits_total`, { tier: 'silver', outcome: 'ok' })).toBe(1);
    expect(value(text, `${p}_commits_total`, { tier: 'silver', outcome: 'conflict' })).toBe(1);
    expect(value(text, `${p}_commit_duration_seconds_count`, { tier: 'silver', outcome: 'ok' })).toBe(1);
    expect(value(text, `${p}_commit_duration_seconds_sum`, { tier: 'silver', outcome: 'ok' })).toBeCloseTo(0.25);
    // 0.25 s falls in the le="0.25" bucket and not below it.
    expect(value(text, `${p}_commit_duration_seconds_bucket`, { tier: 'silver', outcome: 'ok', le: '0.1' })).toBe(0);
    expect(value(text, `${p}_commit_duration_seconds_bucket`, { tier: 'silver', outcome: 'ok', le: '0.25' })).toBe(1);
    const last = value(text, `${p}_last_commit_timestamp_seconds`, { table: 'orders_silver', tier: 'silver' }) as number;
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(60);
    expect(text).toMatch(/# TYPE sluice_merge_compaction_commits_total counter/);
    expect(text).toMatch(/# TYPE sluice_merge_compaction_commit_duration_seconds histogram/);

    const check = checkExposition(text, 'merge-compaction');
    expect(check.problems).toEqual([]);
    expect(check.seen).toContain(`${p}_consumer_lag_messages`);
  });

  it('records a lake.commit span under the active span', async () => {
    await t.withSpan('merge.batch', async () => {
      publish(CHANNELS.lakeCommit, { table: 'orders_bronze', tier: 'bronze', version: 1, durationMs: 5, outcome: 'ok' });
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
    for (const h of hostile) expect(() => publish(CHANNELS.kafkaConsumerLag, h)).not.toThrow();
    expect(() => publish(CHANNELS.lakeCommit, { table: 't', durationMs: 1, outcome: 'exploded' })).not.toThrow();
    // Give an uncaught subscriber error (rethrown on nextTick by diagnostics_channel) a chance to surface.
    await new Promise((r) => setImmediate(r));
    const text = await t.metricsText();
    expect(text).not.toContain('consumer_lag');
    expect(text).not.toContain('commits_total');
    await t.flush();
    await new Promise((r) => setTimeout(r, 20));
    const warnings = logs.lines.filter((l) => l.msg === 'dropped a malformed telemetry event (reported once per channel)');
    expect(warnings.map((w) => w.channel).sort()).toEqual(['sluice:kafka:consumer-lag', 'sluice:lake:commit']);
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
