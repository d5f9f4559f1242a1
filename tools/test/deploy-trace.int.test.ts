import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BatchConsumer, type ConsumedMessage, KafkaAdmin, KafkaProducer } from '@sluice/kafka';
import { type SpanRecord, checkExposition, createTelemetry, extractTraceContext, injectTraceHeaders } from '@sluice/telemetry';
import { testBrokers } from './support/env';

// One event's path ingest → validate → merge-compaction over a real broker is one trace, and
// the Kafka adapter's channel events become each service's metrics.
const unique = (p: string) => `${p}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

async function pollOne(consumer: BatchConsumer, timeoutMs = 30_000): Promise<ConsumedMessage> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const got = await consumer.poll();
    if (got.length > 0) return got[0];
  }
  throw new Error('no message in time');
}

describe('trace context across Kafka', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-trace-'));
  const spansFile = join(dir, 'spans.jsonl');
  const kafka = testBrokers();
  const admin = new KafkaAdmin({ brokers: kafka });
  const producer = new KafkaProducer({ brokers: kafka, clientId: unique('p') });
  const rawTopic = unique('raw');
  const validTopic = unique('valid');
  const make = (service: 'ingest' | 'validate' | 'merge-compaction') =>
    createTelemetry({ service, logDestination: quiet(), traces: { kind: 'jsonl', path: spansFile } });
  const ingest = make('ingest');
  const validate = make('validate');
  const merge = make('merge-compaction');
  let validateConsumer: BatchConsumer;
  let mergeConsumer: BatchConsumer;

  beforeAll(async () => {
    await admin.createTopic({ name: rawTopic, partitions: 1 });
    await admin.createTopic({ name: validTopic, partitions: 1 });
    await producer.connect();
    validateConsumer = new BatchConsumer({ brokers: kafka, groupId: unique('g'), topics: [rawTopic], sessionTimeoutMs: 6000 });
    mergeConsumer = new BatchConsumer({ brokers: kafka, groupId: unique('g'), topics: [validTopic], sessionTimeoutMs: 6000 });
    await validateConsumer.connect();
    await mergeConsumer.connect();
  });
  afterAll(async () => {
    await validateConsumer?.close();
    await mergeConsumer?.close();
    await producer.close();
    await admin.deleteTopics([rawTopic, validTopic]).catch(() => undefined);
    await admin.close();
    await Promise.all([ingest.shutdown(), validate.shutdown(), merge.shutdown()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('links the spans of three services into one trace and feeds their metrics', async () => {
    await ingest.withSpan('ingest.request', async () => {
      await producer.sendBatch([{ topic: rawTopic, key: 'order-1', value: '{"n":1}', headers: injectTraceHeaders<Record<string, string>>({ 'sluice-contract': 'orders' }) }]);
    }, { kind: 'server' });

    const raw = await pollOne(validateConsumer);
    await validate.withSpan('validate.event', async () => {
      await producer.sendBatch([{ topic: validTopic, key: raw.key as Buffer, value: raw.value as Buffer, headers: injectTraceHeaders<Record<string, string>>({}) }]);
    }, { parent: extractTraceContext(raw.headers), kind: 'consumer' });

    const valid = await pollOne(mergeConsumer);
    merge.withSpan('merge.event', () => undefined, { parent: extractTraceContext(valid.headers), kind: 'consumer' });
    // One more poll so the consumer publishes the lag of what it read.
    await mergeConsumer.poll();

    await Promise.all([ingest.flush(), validate.flush(), merge.flush()]);
    const spans: SpanRecord[] = readFileSync(spansFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const byName = new Map(spans.map((s) => [s.name, s]));
    const [i, v, m] = ['ingest.request', 'validate.event', 'merge.event'].map((n) => byName.get(n) as SpanRecord);
    expect([i.service, v.service, m.service]).toEqual(['ingest', 'validate', 'merge-compaction']);
    expect(new Set([i.traceId, v.traceId, m.traceId]).size).toBe(1);
    expect(v.parentSpanId).toBe(i.spanId);
    expect(m.parentSpanId).toBe(v.spanId);

    const ingestText = await ingest.metricsText();
    expect(ingestText).toMatch(/^sluice_ingest_produce_duration_seconds_count \d+$/m);
    const mergeText = await merge.metricsText();
    expect(mergeText).toContain(`sluice_merge_compaction_consumer_lag_messages{topic="${validTopic}",partition="0"} 0`);
    for (const [service, text] of [['ingest', ingestText], ['validate', await validate.metricsText()], ['merge-compaction', mergeText]] as const) {
      expect(checkExposition(text, service).problems).toEqual([]);
    }
  });
});
