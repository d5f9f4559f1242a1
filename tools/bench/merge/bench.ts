// merge-compaction benchmarks against a real Kafka and a real merge-compaction process
// (started as in production: the bundle deploy/bundle.sh builds, run by node).
//
//   npx tsx tools/bench/merge/bench.ts --mode tier1 --events 200000 [--batch-events 100000]
//       (a backlog drained into bronze: events per CPU-second and the service's peak RSS)
//   npx tsx tools/bench/merge/bench.ts --mode freshness --rate 5000 --seconds 30
//   npx tsx tools/bench/merge/bench.ts --mode freshness --rate 1000 --seconds 30 --preload 1000000
//       (silver starts with 1M other entities: the steady state, not a young table's)
//   npx tsx tools/bench/merge/bench.ts --mode files --rate 2000 --seconds 90 --batch-ms 50
//   npx tsx tools/bench/merge/bench.ts --mode baseline --events 100000   (libs/lake append alone, same rows)
//   npx tsx tools/bench/merge/bench.ts --mode floor --events 100000
//       (what tier 1's parts cost with no tier-1 work between them: the same records consumed
//       through libs/kafka and nothing done with them, and the same number of bronze rows
//       generated inside DuckDB and appended by libs/lake, no JS rows; events per CPU-second of
//       the two together is the most any tier 1 built on this client and this lake can do)
//
// Broker from SLUICE_TEST_KAFKA_BROKERS (default 127.0.0.1:19092). Results go to stdout as JSON.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CONTRACTS, encodeSingleObject, validTopicName } from '@sluice/contracts';
import { BatchConsumer, KafkaAdmin, KafkaProducer } from '@sluice/kafka';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { freePort } from '@sluice/testing';
import { bundleService, spawnService } from '../../src/bench/service-bundle';
import { timed } from '../lake/common';

const brokers = process.env.SLUICE_TEST_KAFKA_BROKERS ?? '127.0.0.1:19092';
const orders = CONTRACTS.orders;
const STATUSES = ['created', 'paid', 'shipped', 'delivered', 'cancelled'] as const;

const BASELINE_COLUMNS = (
  [
    ['event_id', 'string'], ['event_time', 'timestamp'], ['producer', 'string'], ['schema_version', 'integer'], ['version', 'long'], ['op', 'string'],
    ['order_id', 'string'], ['customer_id', 'string'], ['status', 'string'], ['total_cents', 'long'], ['currency', 'string'], ['item_count', 'integer'],
    ['coupon_code', 'string'], ['_key_hash', 'long'], ['bucket', 'integer'], ['event_date', 'date'], ['_kafka_partition', 'integer'], ['_kafka_offset', 'long'],
    ['_ingested_at', 'timestamp'], ['_produced_at', 'timestamp'],
  ] as const
).map(([name, type]) => ({ name, type }));

function args<T extends Record<string, string | number>>(defaults: T): T {
  const out: Record<string, string | number> = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    if (!(name in defaults)) throw new Error(`unknown option ${argv[i]}; known: ${Object.keys(defaults).join(', ')}`);
    out[name] = typeof defaults[name] === 'number' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return out as T;
}

const o = args({ mode: 'freshness', events: 200_000, rate: 5000, seconds: 30, batchMs: 1000, entities: 100_000, partitions: 8, foldPercent: 10, compactionMs: 60_000, minFiles: 8, preload: 0, batchEvents: 100_000 });

/** One encoded orders upsert. */
function orderEvent(i: number, entity: number, version: number, eventTimeMs: number): { key: string; value: Buffer } {
  const event = {
    event_id: `b-${i}-${randomBytes(4).toString('hex')}`,
    event_time: eventTimeMs,
    producer: 'bench',
    schema_version: 2,
    version,
    op: 'upsert',
    order_id: `ord-${entity}`,
    payload: { customer_id: `c-${entity % 1000}`, status: STATUSES[i % 5], total_cents: i % 10_000, currency: 'EUR', item_count: 1 + (i % 4), coupon_code: null },
  };
  return { key: event.order_id, value: encodeSingleObject(orders.latest.schema, event) };
}

/** Encoded orders upserts with increasing versions per entity; event_time = planned send time. */
function makeEvents(n: number, startMs: number, rate: number): { key: string; value: Buffer }[] {
  const versions = new Map<number, number>();
  const out: { key: string; value: Buffer }[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const entity = Math.floor(Math.random() * o.entities);
    const version = (versions.get(entity) ?? 0) + 1;
    versions.set(entity, version);
    out[i] = orderEvent(i, entity, version, Math.floor(startMs + (i * 1000) / rate));
  }
  return out;
}

/**
 * Fills silver with `n` entities the timed phase never touches (through the service itself), so
 * the timed phase meets an established table, as in production, instead of a young one that
 * the amortised MERGE rewrites nearly whole every step. Waits until silver has folded them all.
 */
async function preload(n: number, producer: KafkaProducer, admin: KafkaAdmin, topic: string, silverDir: string): Promise<number> {
  const t0 = performance.now();
  const now = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    const batch = Array.from({ length: Math.min(10_000, n - i) }, (_, j) => orderEvent(i + j, o.entities + i + j, 1, now));
    await producer.sendBatch(batch.map((e) => ({ topic, ...e })));
  }
  const ends = await admin.fetchEndOffsets(Array.from({ length: o.partitions }, (_, partition) => ({ topic, partition })));
  for (;;) {
    const folded = await txns(await openTable(silverDir), 'fold:').catch(() => new Map<number, number>());
    if ([...ends].every(([k, end]) => end === 0 || (folded.get(Number(k.slice(k.lastIndexOf(':') + 1))) ?? -1) >= end - 1)) break;
    if (performance.now() - t0 > 900_000) throw new Error('the preload did not reach silver in 15 min');
    await sleep(500);
  }
  return (performance.now() - t0) / 1000;
}

/** Byte bounds that let --batch-events close tier 1's batches (a record counts at ~540 bytes of heap); the buffer holds two. */
function tier1BatchBytes(): number {
  return Math.max(32 * 1024 * 1024, o.batchEvents * 640);
}

/** Process CPU seconds (all threads) and wall seconds of `work`. */
async function measured(work: () => Promise<void>): Promise<{ cpuSeconds: number; wallSeconds: number }> {
  const { cpuMs, ms } = await timed(work);
  return { cpuSeconds: cpuMs / 1000, wallSeconds: ms / 1000 };
}

/**
 * The floor under tier 1, in this process: (1) the tier-1 backlog's records consumed through
 * libs/kafka as tier 1 consumes them (read_committed, polls of up to 1,000), nothing done with
 * them; (2) as many bronze rows generated by DuckDB (a `{ sql }` source: no JS values, no
 * staging) appended by libs/lake in batches of `--batch-events`, tier 1's. Each part's CPU per
 * event, and the events per CPU-second of both together: tier 1 also decodes, checks ids, builds
 * columns and stages them, so it can only be slower. The generated rows are if anything cheaper
 * to write than tier 1's (one timestamp for all rows, small key hashes).
 */
async function floor(topic: string, producer: KafkaProducer, lakeRoot: string): Promise<Record<string, unknown>> {
  {
    const events = makeEvents(o.events, Date.now(), 50_000);
    for (let i = 0; i < events.length; i += 5000) await producer.sendBatch(events.slice(i, i + 5000).map((e) => ({ topic, ...e })));
  }
  // As tier 1 consumes in `--mode tier1`: read_committed, at most 1,000 records a poll
  // (TIER1_POLL_MESSAGES in apps/merge-compaction/src/app.ts), the prefetch queue its
  // SLUICE_MAX_BUFFERED_BYTES gives one topic of 8 partitions there.
  const consumer = new BatchConsumer({
    brokers,
    clientId: 'bench-floor',
    groupId: `bench-floor-${randomBytes(3).toString('hex')}`,
    topics: [topic],
    isolationLevel: 'read_committed',
    maxBatchMessages: 1_000,
    maxBatchBytes: 32 * 1024 * 1024,
    maxPrefetchKbytes: Math.floor((2 * tier1BatchBytes()) / 2 / 1024 / o.partitions),
  });
  await consumer.connect();
  let consumed = 0;
  // Includes the group join (the consumer waits, spending little CPU).
  const consume = await measured(async () => {
    const t0 = performance.now();
    while (consumed < o.events) {
      if (performance.now() - t0 > 600_000) throw new Error(`floor: ${consumed} of ${o.events} records consumed in 10 min`);
      consumed += (await consumer.poll()).length;
    }
  }).finally(() => consumer.close());
  const table = await LakeTable.create(new LocalStorage(path.join(lakeRoot, 'floor')), { columns: BASELINE_COLUMNS, partitionColumns: ['event_date', 'bucket'] });
  const today = new Date().toISOString().slice(0, 10);
  const nowMs = Date.now();
  const rowsSql = (from: number, to: number) =>
    `SELECT 'b-' || i || '-' || lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') AS event_id, make_timestamp(${nowMs}::BIGINT * 1000) AS event_time,
       'bench' AS producer, 2 AS schema_version, 1 + i // ${o.entities} AS version, 'upsert' AS op, 'ord-' || (i % ${o.entities}) AS order_id,
       'c-' || (i % 1000) AS customer_id, ['created', 'paid', 'shipped', 'delivered', 'cancelled'][1 + i % 5] AS status, i % 10000 AS total_cents,
       'EUR' AS currency, 1 + i % 4 AS item_count, NULL::VARCHAR AS coupon_code, (i * 2654435761) % 4294967296 AS _key_hash, i % 32 AS bucket,
       DATE '${today}' AS event_date, i % ${o.partitions} AS _kafka_partition, i AS _kafka_offset, make_timestamp(${nowMs}::BIGINT * 1000) AS _ingested_at,
       make_timestamp(${nowMs}::BIGINT * 1000) AS _produced_at
     FROM range(${from}, ${to}) r(i)`;
  const append = await measured(async () => {
    for (let done = 0; done < o.events; done += o.batchEvents) await table.append({ sql: rowsSql(done, Math.min(o.events, done + o.batchEvents)) });
  });
  const rows = (await table.snapshot()).numRecords();
  if (rows !== o.events) throw new Error(`floor: bronze-shaped table holds ${rows} rows, expected ${o.events}`);
  const perEvent = (cpu: number) => Number(((cpu / o.events) * 1e6).toFixed(2));
  return {
    events: o.events,
    consume: { ...consume, cpuMicrosPerEvent: perEvent(consume.cpuSeconds) },
    lakeAppendFromDuckDb: { ...append, cpuMicrosPerEvent: perEvent(append.cpuSeconds) },
    floorEventsPerCpuSecond: Math.round(o.events / (consume.cpuSeconds + append.cpuSeconds)),
  };
}

/** The process's peak resident memory so far (VmHWM), MB. */
function peakRssMb(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? NaN : Math.round(Number(kb) / 1024);
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function startService(env: Record<string, string>, logFile: string): Promise<ChildProcess> {
  // As its image runs it (deploy/bundle.sh), built under .sluice/bench.
  const main = await bundleService('merge-compaction');
  const child = spawnService(main, env);
  fs.open(logFile, 'a').then((h) => {
    const s = h.createWriteStream();
    child.stdout?.pipe(s);
    child.stderr?.pipe(s);
  });
  return child;
}

async function waitReady(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200).catch(() => false);
    if (ok) return;
    await sleep(100);
  }
  throw new Error('service not ready after 60 s');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pct(sorted: readonly number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}

async function txns(table: LakeTable | undefined, prefix: string): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!table) return out;
  for (const [appId, v] of (await table.snapshot()).txnVersions()) {
    if (appId.startsWith(prefix)) out.set(Number(appId.slice(appId.lastIndexOf('-') + 1)), Number(v));
  }
  return out;
}

async function openTable(dir: string): Promise<LakeTable | undefined> {
  try {
    return await LakeTable.open(new LocalStorage(dir));
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const id = randomBytes(3).toString('hex');
  const prefix = `bench${id}.`;
  const topic = `${prefix}${validTopicName('orders')}`;
  const lakeRoot = path.join(process.env.BENCH_DIR ?? os.tmpdir(), `bench-merge-${id}`);
  await fs.mkdir(lakeRoot, { recursive: true });
  const logFile = path.join(lakeRoot, 'service.log');
  const admin = new KafkaAdmin({ brokers });
  await admin.createTopic({ name: topic, partitions: o.partitions });
  const producer = new KafkaProducer({ brokers, lingerMs: 5, batchMessages: 10_000 });
  await producer.connect();
  // Outside the ephemeral range, which outgoing connections' source ports come from.
  const port = await freePort();
  const env = {
    SLUICE_KAFKA_BROKERS: brokers,
    SLUICE_MERGE_GROUP_ID: `bench-${id}`,
    SLUICE_CONTRACTS: 'orders',
    SLUICE_TOPIC_PREFIX: prefix,
    SLUICE_LAKE_ROOT: lakeRoot,
    SLUICE_BATCH_MAX_MS: String(o.batchMs),
    SLUICE_MERGE_INTERVAL_MS: String(Math.max(50, Math.floor(o.batchMs / 2))),
    SLUICE_SILVER_FOLD_PERCENT: String(o.foldPercent),
    SLUICE_COMPACTION_INTERVAL_MS: String(o.compactionMs),
    SLUICE_COMPACTION_MIN_FILES: String(o.minFiles),
    OPS_PORT: String(port),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  };
  const result: Record<string, unknown> = { mode: o.mode, options: o, cpus: os.cpus().length, loadavg: os.loadavg() };
  let child: ChildProcess | undefined;
  try {
    if (o.mode === 'baseline') {
      // The floor under tier 1: libs/lake appending bronze-shaped rows in batches like tier 1's,
      // in this process, measured in rows per CPU-second (DuckDB threads included).
      const table = await LakeTable.create(new LocalStorage(path.join(lakeRoot, 'baseline')), { columns: BASELINE_COLUMNS, partitionColumns: ['event_date', 'bucket'] });
      const batch = 20_000;
      const { cpuSeconds: cpu, wallSeconds: wall } = await measured(async () => {
        for (let done = 0; done < o.events; done += batch) {
          const now = new Date().toISOString();
          const rows = Array.from({ length: Math.min(batch, o.events - done) }, (_, j) => {
            const i = done + j;
            return { event_id: `e-${i}`, event_time: now, producer: 'bench', schema_version: 2, version: 1, op: 'upsert', order_id: `ord-${i % o.entities}`, customer_id: 'c', status: STATUSES[i % 5], total_cents: i, currency: 'EUR', item_count: 1, coupon_code: null, _key_hash: i, bucket: i % 32, event_date: now.slice(0, 10), _kafka_partition: i % 8, _kafka_offset: i, _ingested_at: now, _produced_at: now };
          });
          await table.append({ rows });
        }
      });
      Object.assign(result, { events: o.events, wallSeconds: wall, eventsPerSecond: Math.round(o.events / wall), cpuSeconds: cpu, eventsPerCpuSecond: Math.round(o.events / cpu) });
    } else if (o.mode === 'floor') {
      Object.assign(result, await floor(topic, producer, lakeRoot));
    } else if (o.mode === 'tier1') {
      // Tier 1 alone: a backlog of o.events, drained into bronze; events per wall second and per CPU second.
      const events = makeEvents(o.events, Date.now(), 50_000);
      for (let i = 0; i < events.length; i += 5000) await producer.sendBatch(events.slice(i, i + 5000).map((e) => ({ topic, ...e })));
      const ends = await admin.fetchEndOffsets(Array.from({ length: o.partitions }, (_, partition) => ({ topic, partition })));
      const batchBytes = tier1BatchBytes();
      child = await startService(
        { ...env, SLUICE_ROLES: 'tier1', SLUICE_BATCH_MAX_EVENTS: String(o.batchEvents), SLUICE_BATCH_MAX_BYTES: String(batchBytes), SLUICE_MAX_BUFFERED_BYTES: String(2 * batchBytes) },
        logFile,
      );
      await waitReady(port);
      const cpu0 = cpuSeconds(child.pid!);
      const t0 = performance.now();
      const bronzeDir = path.join(lakeRoot, CONTRACTS.orders.tables.bronze);
      for (;;) {
        const done = await txns(await openTable(bronzeDir), 'bronze:');
        if ([...ends].every(([k, end]) => (done.get(Number(k.slice(k.lastIndexOf(':') + 1))) ?? -1) >= end - 1)) break;
        if (performance.now() - t0 > 600_000) throw new Error('tier1 did not drain in 10 min');
        await sleep(100);
      }
      const wall = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(child.pid!) - cpu0;
      Object.assign(result, { events: o.events, wallSeconds: wall, eventsPerSecond: Math.round(o.events / wall), cpuSeconds: cpu, eventsPerCpuSecond: Math.round(o.events / cpu), peakRssMb: peakRssMb(child.pid!) });
    } else {
      // Sustained rate; freshness = first time silver's fold txn covers an event's offset − its send time.
      child = await startService(env, logFile);
      await waitReady(port);
      const silverDir = path.join(lakeRoot, CONTRACTS.orders.tables.silver);
      if (o.preload > 0) result.preloadSeconds = Math.round(await preload(o.preload, producer, admin, topic, silverDir));
      const total = o.rate * o.seconds;
      const startMs = Date.now() + 500;
      const events = makeEvents(total, startMs, o.rate);
      const sent = new Map<number, { offset: number; at: number }[]>();
      let stopPoll = false;
      const latencies: number[] = [];
      const poller = (async () => {
        let silver: LakeTable | undefined;
        const cursor = new Map<number, number>();
        while (!stopPoll) {
          silver ??= await openTable(silverDir);
          const folded = await txns(silver, 'fold:').catch(() => new Map<number, number>());
          const now = Date.now();
          for (const [p, upTo] of folded) {
            const list = sent.get(p) ?? [];
            let i = cursor.get(p) ?? 0;
            while (i < list.length && list[i].offset <= upTo) latencies.push(now - list[i++].at);
            cursor.set(p, i);
          }
          if (latencies.length >= total) break;
          await sleep(100);
        }
      })();
      const tick = 100;
      const perTick = Math.max(1, Math.round((o.rate * tick) / 1000));
      const cpu0 = cpuSeconds(child.pid!);
      const t0 = performance.now();
      for (let i = 0; i < total; i += perTick) {
        const due = t0 + (i / o.rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const at = Date.now();
        const reports = await producer.sendBatch(events.slice(i, i + perTick).map((e) => ({ topic, ...e })));
        for (const r of reports) {
          let l = sent.get(r.partition);
          if (!l) sent.set(r.partition, (l = []));
          l.push({ offset: r.offset, at });
        }
      }
      const produceSeconds = (performance.now() - t0) / 1000;
      for (const l of sent.values()) l.sort((a, b) => a.offset - b.offset);
      const deadline = Date.now() + 120_000;
      while (latencies.length < total && Date.now() < deadline) await sleep(200);
      stopPoll = true;
      await poller;
      const cpu = cpuSeconds(child.pid!) - cpu0;
      const sorted = [...latencies].sort((a, b) => a - b);
      Object.assign(result, {
        events: total,
        achievedRate: Math.round(total / produceSeconds),
        visible: latencies.length,
        freshnessMs: { p50: pct(sorted, 50), p95: pct(sorted, 95), p99: pct(sorted, 99), max: sorted[sorted.length - 1] },
        serviceCpuPercent: Math.round((100 * cpu) / ((performance.now() - t0) / 1000)),
      });
      if (o.mode === 'files') {
        // Let one more compaction pass run, then count files per partition.
        await sleep(o.compactionMs + 2000);
        for (const name of [CONTRACTS.orders.tables.bronze, CONTRACTS.orders.tables.silver]) {
          const t = await openTable(path.join(lakeRoot, name));
          if (!t) continue;
          const snap = await t.snapshot();
          const per = new Map<string, number>();
          for (const f of snap.files) {
            const k = JSON.stringify(f.partitionValues);
            per.set(k, (per.get(k) ?? 0) + 1);
          }
          const counts = [...per.values()].sort((a, b) => a - b);
          const sizes = snap.files.map((f) => f.size).sort((a, b) => a - b);
          result[name] = {
            version: snap.version,
            files: snap.files.length,
            partitions: per.size,
            filesPerPartition: { median: pct(counts, 50), max: counts[counts.length - 1] },
            medianFileBytes: pct(sizes, 50),
          };
        }
      }
    }
  } finally {
    if (child && child.exitCode === null) {
      // Stop the service before deleting its tables, so it never writes into a removed directory.
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      const graceful = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
      if (!graceful) {
        child.kill('SIGKILL');
        await exited;
      }
      result.gracefulStop = graceful;
    }
    await producer.close();
    await admin.deleteTopics([topic]).catch(() => undefined);
    await admin.close();
    if (!process.env.BENCH_KEEP) await fs.rm(lakeRoot, { recursive: true, force: true });
  }
  console.log(JSON.stringify(result, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
