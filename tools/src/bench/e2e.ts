import { createHash } from 'node:crypto';
import { loadavg, cpus } from 'node:os';
import * as path from 'node:path';
import { CONTRACTS, CONTRACT_NAMES } from '@sluice/contracts';
import { KafkaAdmin } from '@sluice/kafka';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { readTable } from '../chaos/audit';
import { EventStream, type GeneratedEvent } from '../generator';
import { measurePassThrough, type CeilingResult } from './ceiling';
import { HttpSender, RawSender, driveLoad } from './load';
import { ProcWatcher } from './proc';
import { DEMO_API_KEY, DEMO_QUERY_TOKEN, sleep, waitUntil, type Stack } from './stack';

/** Settings of the end-to-end benchmark. */
export interface E2eOptions {
  readonly stack: Stack;
  /** Pid of the broker JVM (for its CPU and RSS), when known. */
  readonly brokerPid?: number;
  readonly seconds: number;
  /** Offered events/s (0 = as fast as ingest acknowledges). */
  readonly rate: number;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly seed: number;
  /** The load's events ({@link loadStream}); a backlog run after it goes on with the same stream. */
  readonly stream: EventStream;
  /** Events of the bare pass-through measurement. */
  readonly ceilingEvents: number;
  /**
   * Before the load, version 1 of every entity of `stream` (~170,000 events) sent and folded
   * ({@link preloadEntities}): the load then meets tables of their steady-state size.
   */
  readonly preload?: boolean;
  readonly drainTimeoutMs: number;
  readonly progress: (line: string) => void;
}

/** One sample of the timeline, taken every second. */
export interface Sample {
  /** Seconds since the load started. */
  readonly t: number;
  readonly acked: number;
  readonly visible: number;
  readonly ackedPerSecond: number;
  readonly visiblePerSecond: number;
  readonly lagValidate: number;
  readonly lagMerge: number;
  readonly procs: Record<string, { cpuPercent: number; rssMiB: number; peakRssMiB: number }>;
}

/** Percentiles of a list of numbers. */
export function percentiles(values: readonly number[]): { p50: number; p95: number; p99: number; max: number; n: number } {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]);
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: s[s.length - 1] ?? NaN, n: s.length };
}

/**
 * Bronze rows visible through query-api, or NaN when a read failed: a failed read counted as 0
 * rows made the next sample's jump count twice in the steady rate.
 */
async function visibleRows(stack: Stack): Promise<number> {
  let total = 0;
  for (const c of CONTRACT_NAMES) {
    const rows = await tableRows(stack, CONTRACTS[c].tables.bronze);
    if (Number.isNaN(rows)) return NaN;
    total += rows;
  }
  return total;
}

/** A table's `rowCount` through query-api; NaN when it cannot be read. */
async function tableRows(stack: Stack, table: string): Promise<number> {
  const r = await fetch(`${stack.queryUrl}/v1/tables/${table}`, { headers: { authorization: `Bearer ${DEMO_QUERY_TOKEN}` }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  if (r?.status !== 200) return NaN;
  return Number(((await r.json()) as { rowCount?: number }).rowCount ?? 0);
}

/** Requests of the preload in flight, and events per request. */
const PRELOAD_IN_FLIGHT = 4;
const PRELOAD_BATCH = 5_000;

/**
 * Sends version 1 of every entity of `stream` through ingest, then waits until bronze holds them
 * and silver_orders (the table the freshness probes are looked up in) shows every order: the
 * measured load then meets silver at its steady-state size, as a table in production is, instead
 * of a young one whose every fold step rewrites nearly all of it. Returns the events sent.
 */
async function preloadEntities(stack: Stack, stream: EventStream, o: Pick<E2eOptions, 'drainTimeoutMs' | 'progress'>): Promise<GeneratedEvent[]> {
  const events = stream.everyEntityOnce();
  const started = Date.now();
  o.progress(`preload: version 1 of every entity, ${events.length} events`);
  const sender = new HttpSender(() => stack.ingestUrl, DEMO_API_KEY, undefined, o.drainTimeoutMs);
  for (let i = 0; i < events.length; i += PRELOAD_BATCH * PRELOAD_IN_FLIGHT) {
    const batches = Array.from({ length: PRELOAD_IN_FLIGHT }, (_, k) => events.slice(i + k * PRELOAD_BATCH, i + (k + 1) * PRELOAD_BATCH)).filter((b) => b.length > 0);
    await Promise.all(batches.map((b) => sender.send(b)));
  }
  if (sender.mismatches.length > 0) throw new Error(`preload: ingest refused valid events: ${sender.mismatches.slice(0, 3).join('; ')}`);
  await waitUntil('the preload in bronze', async () => (await visibleRows(stack)) >= events.length, o.drainTimeoutMs, 1000);
  const orders = events.filter((e) => e.contract === 'orders').length;
  await waitUntil('the preload in silver_orders', async () => (await tableRows(stack, CONTRACTS.orders.tables.silver)) >= orders, o.drainTimeoutMs, 1000);
  o.progress(`preload: visible after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return events;
}

/** 48 bits of an id's MD5 as a BigInt; summed over a set of ids, a digest that bronze's SQL reproduces. */
export function idDigest(eventId: string): bigint {
  return BigInt(`0x${createHash('md5').update(eventId).digest('hex').slice(0, 12)}`);
}

/**
 * Rows, distinct event ids and the digest of the distinct ids ({@link idDigest}) of every bronze
 * table, read from the lake (not through query-api's metadata). Counts alone let a lost event and
 * a stray one cancel out; the digest tells the two sets apart.
 */
export async function bronzeCounts(lakeRoot: string): Promise<{ rows: number; eventIds: number; digest: bigint }> {
  let rows = 0;
  let eventIds = 0;
  let digest = 0n;
  for (const c of CONTRACT_NAMES) {
    const [r] = await readTable(
      { root: lakeRoot },
      CONTRACTS[c].tables.bronze,
      "SELECT count(*) AS n, count(DISTINCT event_id) AS d, (SELECT coalesce(sum(('0x' || substr(md5(id), 1, 12))::BIGINT), 0) FROM (SELECT DISTINCT event_id AS id FROM t))::VARCHAR AS h FROM t",
    );
    rows += Number(r?.n ?? 0);
    eventIds += Number(r?.d ?? 0);
    digest += BigInt(String(r?.h ?? '0'));
  }
  return { rows, eventIds, digest };
}

/**
 * merge-compaction keeps its offsets in the bronze tables' `txn` actions (`bronze:<topic>-<p>` =
 * last offset written), not in its consumer group: its lag is the valid topics' end offsets
 * minus those. Transaction markers count as offsets, so a caught-up partition shows 1–2.
 */
async function mergeLag(admin: KafkaAdmin, stack: Stack): Promise<number> {
  try {
    const parts = CONTRACT_NAMES.flatMap((c) => Array.from({ length: 8 }, (_, partition) => ({ topic: stack.topics.valid(c), partition })));
    const ends = await admin.fetchEndOffsets(parts, true);
    const done = new Map<string, number>();
    for (const c of CONTRACT_NAMES) {
      const table = await LakeTable.open(new LocalStorage(path.join(stack.lakeRoot, CONTRACTS[c].tables.bronze))).catch(() => undefined);
      if (!table) continue;
      for (const [appId, v] of (await table.snapshot()).txnVersions()) {
        const m = /^bronze:(.*)-(\d+)$/.exec(appId);
        if (m) done.set(`${m[1]}:${m[2]}`, Number(v) + 1);
      }
    }
    let lag = 0;
    for (const [k, end] of ends) lag += Math.max(0, end - (done.get(k) ?? 0));
    return lag;
  } catch {
    return NaN;
  }
}

async function lagOf(admin: KafkaAdmin, group: string, topics: string[]): Promise<number> {
  try {
    return (await admin.fetchLag(group, topics)).reduce((s, p) => s + Math.max(0, p.lag), 0);
  } catch {
    return NaN;
  }
}

/** Files per partition and file sizes of every table. */
export async function fileLayout(lakeRoot: string): Promise<Record<string, { files: number; partitions: number; maxFilesPerPartition: number; avgFilesPerPartition: number; bytes: { min: number; p50: number; max: number; total: number } }>> {
  const out: Awaited<ReturnType<typeof fileLayout>> = {};
  for (const c of CONTRACT_NAMES) {
    const names = [CONTRACTS[c].tables.bronze, CONTRACTS[c].tables.silver, ...CONTRACTS[c].aggregates.map((a) => a.table)];
    for (const name of names) {
      try {
        const snap = await (await LakeTable.open(new LocalStorage(path.join(lakeRoot, name)))).snapshot();
        const perPartition = new Map<string, number>();
        for (const f of snap.files) {
          const k = JSON.stringify(f.partitionValues);
          perPartition.set(k, (perPartition.get(k) ?? 0) + 1);
        }
        const sizes = snap.files.map((f) => f.size);
        const p = percentiles(sizes);
        out[name] = {
          files: snap.files.length,
          partitions: perPartition.size,
          maxFilesPerPartition: Math.max(0, ...perPartition.values()),
          avgFilesPerPartition: perPartition.size ? +(snap.files.length / perPartition.size).toFixed(2) : 0,
          bytes: { min: Math.min(...sizes), p50: p.p50, max: p.max, total: sizes.reduce((s, n) => s + n, 0) },
        };
      } catch {
        // table not created (no events of that contract reached it)
      }
    }
  }
  return out;
}

/**
 * The stream of the load: every contract, duplicates up to 20,000 events later, older versions
 * up to 5,000 events after their newer one (past a micro-batch at these rates), no invalid
 * events (ingest would refuse them).
 */
export function loadStream(seed: number): EventStream {
  return new EventStream({ seed, runId: `b${seed}`, clock: () => Date.now(), invalidRate: 0, reorderDistance: 5000, duplicateDistance: 20_000 });
}

/** One freshness probe: an order of its own entity, sent on its own timer. */
interface Probe {
  readonly key: string;
  readonly eventId: string;
  readonly createdAt: number;
}

/** When a probe passed each point: sent, acknowledged by ingest, visible through query-api (ms). */
interface ProbeTimes {
  readonly createdAt: number;
  ackedAt?: number;
  visibleAt?: number;
}

/** Probes sent per second: one every this many ms, whatever ingest's backpressure. */
const PROBE_EVERY_MS = 500;
/** Outstanding probes looked up per round, oldest first: one that never shows holds no other. */
const PROBES_PER_ROUND = 5;

/**
 * The measured run: the ceiling (bare pass-through) before and after, then Sluice under load for
 * `seconds` with per-second samples (acked and visible throughput, consumer lag, CPU/RSS per
 * process), freshness probes (a marker order every 500 ms, sent on a timer of their own and
 * looked up through query-api until visible), the drain after the load, the lake's file layout,
 * and whether bronze holds exactly the acknowledged events.
 */
export async function runE2e(o: E2eOptions) {
  const { stack, stream } = o;
  // The ceiling's sample values come from a stream of their own: taken from `stream`, the
  // duplicates it had scheduled for them went to ingest without their originals, and bronze held
  // rows nobody counted as acknowledged (6 per run), which hid as many lost events.
  const values = new EventStream({ seed: o.seed + 1_000_003, runId: `c${o.seed}`, clock: () => Date.now(), invalidRate: 0 }).take(2000).map((e) => e.body);
  const ceilingRun = async (when: string): Promise<CeilingResult> => {
    o.progress(`ceiling ${when}: ${o.ceilingEvents} records produce → consume → produce → consume, no processing`);
    const c = await measurePassThrough({ brokers: stack.options.brokers, values, events: o.ceilingEvents, partitions: 8 });
    o.progress(`ceiling ${when}: ${Math.round(c.eventsPerSecond)} events/s`);
    return c;
  };
  const ceilingBefore = await ceilingRun('before');

  const admin = new KafkaAdmin({ brokers: stack.options.brokers, clientId: 'sluice-bench' });
  const watcher = new ProcWatcher();
  const pids = () => ({ ...stack.pids(), ...(o.brokerPid ? { broker: o.brokerPid } : {}), 'load-driver': process.pid });
  const restartsAtStart = restartsOf(stack);
  const timeline: Sample[] = [];
  const freshness: [number, number][] = [];
  const probes: Probe[] = [];
  const probeTimes = new Map<string, ProbeTimes>();
  let probesSent = 0;
  /** Unique valid events acknowledged (duplicates excluded: bronze holds each once), and their id digest. */
  let acked = 0;
  let ackedDigest = 0n;
  const countAcked = (batch: readonly GeneratedEvent[]) => {
    for (const e of batch) {
      if (e.kind !== 'valid') continue;
      acked++;
      ackedDigest += idDigest(e.eventId);
    }
  };
  // Counted as acknowledged (bronze must hold them), left out of every rate below.
  const preload = o.preload ? await preloadEntities(stack, stream, o) : [];
  countAcked(preload);
  const preloaded = preload.length;
  const started = Date.now();
  const t = () => (Date.now() - started) / 1000;

  let sampling = true;
  let prev = { acked, at: Date.now() };
  /** The last good read of visible rows: a failed read leaves it, so the next good one spans both intervals. */
  let lastRead = { visible: preloaded, at: Date.now() };
  const sampler = (async () => {
    while (sampling) {
      const [read, lagValidate, lagMerge] = await Promise.all([visibleRows(stack), lagOf(admin, `${stack.options.prefix}validate`, [stack.topics.raw]), mergeLag(admin, stack)]);
      const now = Date.now();
      const dt = (now - prev.at) / 1000;
      const failed = Number.isNaN(read);
      const s: Sample = {
        t: +t().toFixed(1),
        acked,
        visible: failed ? lastRead.visible : read,
        ackedPerSecond: Math.round((acked - prev.acked) / dt),
        // A failed read is a gap (JSON null); the next good one is a rate over both intervals.
        visiblePerSecond: failed ? NaN : Math.round((read - lastRead.visible) / ((now - lastRead.at) / 1000)),
        lagValidate,
        lagMerge,
        procs: watcher.sample(pids()),
      };
      prev = { acked, at: now };
      if (!failed) lastRead = { visible: read, at: now };
      timeline.push(s);
      if (timeline.length % 5 === 0) {
        const rss = Object.entries(s.procs).map(([k, v]) => `${k} ${Math.round(v.rssMiB)}MiB/${Math.round(v.cpuPercent)}%`).join(', ');
        const f = percentiles(freshness.slice(-20).map(([, v]) => v));
        o.progress(`t=${s.t}s acked ${s.acked} (${s.ackedPerSecond}/s) visible ${s.visible} (${s.visiblePerSecond}/s) lag raw ${s.lagValidate} valid ${s.lagMerge} freshness p50 ${f.p50}s; ${rss}`);
      }
      await sleep(Math.max(0, 1000 - (Date.now() - now)));
    }
  })();

  // Probes go out on a timer, each as its own request: made only between load batches, none
  // were made while ingest pushed back, and the stalls went unmeasured.
  let loading = true;
  const probeSender = new HttpSender(() => stack.ingestUrl, DEMO_API_KEY, undefined, o.drainTimeoutMs);
  const probeSends = new Set<Promise<void>>();
  const probeTimer = (async () => {
    while (loading) {
      const probe = probeEvent(o.seed, probesSent++);
      const times: ProbeTimes = { createdAt: Date.now() };
      probes.push({ key: probe.key, eventId: probe.eventId, createdAt: times.createdAt });
      probeTimes.set(probe.eventId, times);
      const sent: Promise<void> = probeSender
        .send([probe])
        .then(() => {
          times.ackedAt = Date.now();
          countAcked([probe]);
        })
        .catch((err: Error) => o.progress(`probe ${probe.key} not acknowledged: ${err.message}`))
        .finally(() => probeSends.delete(sent));
      probeSends.add(sent);
      await sleep(PROBE_EVERY_MS);
    }
  })();
  const prober = (async () => {
    while (sampling || probes.length > 0) {
      for (const p of probes.slice(0, PROBES_PER_ROUND)) {
        const r = await fetch(`${stack.queryUrl}/v1/tables/${CONTRACTS.orders.tables.silver}/entities/${p.key}`, { headers: { authorization: `Bearer ${DEMO_QUERY_TOKEN}` }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
        if (r) await r.arrayBuffer();
        if (r?.status === 200) {
          probeTimes.get(p.eventId)!.visibleAt = Date.now();
          freshness.push([+((p.createdAt - started) / 1000).toFixed(1), (Date.now() - p.createdAt) / 1000]);
        }
        if (r?.status === 200 || Date.now() - p.createdAt > o.drainTimeoutMs) probes.splice(probes.indexOf(p), 1);
      }
      await sleep(100);
    }
  })();

  const http = new HttpSender(() => stack.ingestUrl, DEMO_API_KEY, undefined);
  o.progress(`load: ${o.rate || 'max'} events/s offered for ${o.seconds} s, batches of ${o.batchSize}, ${o.concurrency} in flight`);
  await driveLoad({ next: () => stream.next(), sender: http, rate: o.rate, durationMs: o.seconds * 1000, batchSize: o.batchSize, concurrency: o.concurrency, onAcked: (_at, b) => countAcked(b) });
  // The load's length is the driver's, not the wait for the last probes' acknowledgements.
  const loadSeconds = t();
  loading = false;
  await probeTimer;
  await Promise.all(probeSends);
  const visibleAtLoadEnd = timeline[timeline.length - 1]?.visible ?? 0;
  o.progress(`load done after ${loadSeconds.toFixed(1)} s: ${acked} acknowledged; draining`);
  let drainSeconds = NaN;
  await waitUntil('drain', async () => (await visibleRows(stack)) >= acked, o.drainTimeoutMs, 1000)
    .then(() => (drainSeconds = t() - loadSeconds))
    .catch(() => o.progress('drain did not finish in time'));
  sampling = false;
  await Promise.all([sampler, prober]);
  await admin.close();

  // Sustained = what became visible over the whole run (load + drain) per second of load+drain.
  const visibleEnd = await visibleRows(stack);
  const totalSeconds = t();
  // Steady = the increase over the load after its first 10 s, end to end (not a mean of samples).
  const steady = timeline.filter((s) => s.t > 10 && s.t <= loadSeconds);
  const steadyRate = steady.length >= 2 ? (steady[steady.length - 1].visible - steady[0].visible) / (steady[steady.length - 1].t - steady[0].t) : NaN;
  const perProc = processSummary(timeline, watcher);
  // A probe that never became visible counts as infinitely late (JSON null), not as absent: the
  // percentiles of the probes that arrived alone are a lower bound.
  const probesTimedOut = probesSent - freshness.length;
  const fresh = percentiles([...freshness.map(([, v]) => v), ...new Array<number>(probesTimedOut).fill(Infinity)]);
  // Delivery, read from the lake itself: bronze must hold exactly the acknowledged events, once.
  const delivered = await bronzeCounts(stack.lakeRoot);
  // A failure of the second ceiling costs its number, not the run's results.
  const ceilingAfter = await ceilingRun('after').catch((err: Error) => ({ error: err.message }));
  // The higher of the two: a ceiling taken on a cold broker, or while it still compacts the
  // load's segments, would flatter the ratio.
  const ceiling = 'error' in ceilingAfter || ceilingBefore.eventsPerSecond >= ceilingAfter.eventsPerSecond ? ceilingBefore : ceilingAfter;
  const sustained = (visibleEnd - preloaded) / totalSeconds;
  const result = {
    machine: { cpus: cpus().length, loadavgAtEnd: loadavg().map((x) => +x.toFixed(2)) },
    ceiling,
    ceilings: { before: ceilingBefore, after: ceilingAfter },
    sluice: {
      offeredRate: o.rate,
      loadSeconds: +loadSeconds.toFixed(1),
      acked,
      preloaded,
      ackedPerSecond: Math.round((acked - preloaded) / loadSeconds),
      visibleAtLoadEnd,
      visibleAtEnd: visibleEnd,
      drainSeconds: +drainSeconds.toFixed(1),
      sustainedEventsPerSecond: Math.round(sustained),
      steadyVisiblePerSecond: Math.round(steadyRate),
      ratioToCeiling: +(sustained / ceiling.eventsPerSecond).toFixed(3),
      freshnessSeconds: fresh,
      // A failed read costs the split, not the run's results.
      freshnessStages: await probeStages(stack.lakeRoot, probeTimes).catch((err: Error) => ({ error: err.message })),
      probesSent,
      probesTimedOut,
      delivered: {
        acked,
        bronzeRows: delivered.rows,
        bronzeEventIds: delivered.eventIds,
        sameIds: delivered.digest === ackedDigest,
        /** Sum of {@link idDigest} over the acknowledged ids, as decimal text (JSON has no BigInt). */
        idDigest: ackedDigest.toString(),
        drained: !Number.isNaN(drainSeconds),
        exactlyOnce: delivered.rows === acked && delivered.eventIds === acked && delivered.digest === ackedDigest,
      },
      maxLag: { validate: Math.max(0, ...timeline.map((s) => s.lagValidate || 0)), merge: Math.max(0, ...timeline.map((s) => s.lagMerge || 0)) },
      processes: perProc,
      restarts: restartsSince(stack, restartsAtStart),
      retries: http.retries + probeSender.retries,
      // Valid events ingest refused: counted as acknowledged nowhere, they would show as lost.
      mismatches: [...http.mismatches, ...probeSender.mismatches],
    },
    files: await fileLayout(stack.lakeRoot),
    timeline,
    freshness,
  };
  return result;
}

/**
 * Where the visible probes' time went, from the times the bench saw (sent, acknowledged, visible)
 * and the two bronze keeps for each row: `_produced_at`, the valid record's Kafka timestamp (set
 * when validate produced it, before its transaction committed), and `_ingested_at`, when tier 1
 * closed the micro-batch and began its append. Percentiles in seconds per stage:
 * - `acknowledged`: sent → ingest's answer (Kafka acknowledged the raw record);
 * - `toValidTopic`: sent → validate produced the valid record;
 * - `toBronzeBatch`: that → tier 1's batch closed (validate's commit, tier 1's fetch, the batch wait);
 * - `toVisible`: that → visible (bronze append, the folder's watch, the fold, query-api's
 *   snapshot refresh, the bench's lookup round).
 */
async function probeStages(lakeRoot: string, times: ReadonlyMap<string, ProbeTimes>) {
  const ids = [...times].filter(([, p]) => p.visibleAt !== undefined).map(([id]) => `'${id.replace(/'/g, "''")}'`);
  const rows = ids.length
    ? await readTable(
        { root: lakeRoot },
        CONTRACTS.orders.tables.bronze,
        `SELECT event_id, epoch_ms(_produced_at)::DOUBLE AS produced, epoch_ms(_ingested_at)::DOUBLE AS ingested FROM t WHERE event_id IN (${ids.join(', ')})`,
      )
    : [];
  const stages = { acknowledged: [] as number[], toValidTopic: [] as number[], toBronzeBatch: [] as number[], toVisible: [] as number[] };
  for (const r of rows) {
    const p = times.get(String(r.event_id))!;
    const produced = Number(r.produced);
    const ingested = Number(r.ingested);
    if (p.ackedAt !== undefined) stages.acknowledged.push((p.ackedAt - p.createdAt) / 1000);
    stages.toValidTopic.push((produced - p.createdAt) / 1000);
    stages.toBronzeBatch.push((ingested - produced) / 1000);
    stages.toVisible.push((p.visibleAt! - ingested) / 1000);
  }
  return Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, percentiles(v)]));
}

/** The `n`th freshness probe of a run: an order of an entity no other event touches. */
function probeEvent(seed: number, n: number): GeneratedEvent {
  const now = Date.now();
  const key = `probe-${seed}-${n}`;
  const event = { event_id: `b${seed}-probe-${n}`, event_time: now, producer: 'bench', schema_version: 2, version: 1, op: 'upsert' as const, order_id: key, payload: { customer_id: 'probe', status: 'paid', total_cents: 1, currency: 'EUR', item_count: 1, coupon_code: null } };
  return { seq: -1, contract: 'orders', key, eventId: event.event_id, kind: 'valid', event, body: JSON.stringify({ contract: 'orders', ...event, event_time: new Date(now).toISOString() }) };
}

/** Restarts per service instance so far (the supervisor restarts a service that died). */
function restartsOf(stack: Stack): Map<string, number> {
  return new Map([...stack.procs.values()].map((p) => [p.id, p.restarts]));
}

/** Restarts since `before`, per instance that had any. */
function restartsSince(stack: Stack, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [id, n] of restartsOf(stack)) if (n > (before.get(id) ?? 0)) out[id] = n - (before.get(id) ?? 0);
  return out;
}

/** Raises `peak` (MiB per service, instances merged) to one sample's RSS and VmHWM (peaks between samples too). */
function addPeaks(peak: Record<string, number>, procs: Sample['procs']): void {
  for (const [name, v] of Object.entries(procs)) {
    const id = name.replace(/-\d+$/, '');
    peak[id] = Math.max(peak[id] ?? 0, v.rssMiB, v.peakRssMiB);
  }
}

/** Peak RSS and average CPU per service, instances merged. */
function processSummary(timeline: readonly Sample[], watcher: ProcWatcher): Record<string, { peakRssMiB: number; avgCpuPercent: number }> {
  const peak: Record<string, number> = {};
  for (const s of timeline) addPeaks(peak, s.procs);
  const out = Object.fromEntries(Object.entries(peak).map(([id, mib]) => [id, { peakRssMiB: mib, avgCpuPercent: 0 }]));
  for (const [name, cpu] of Object.entries(watcher.averageCpuPercent())) {
    const id = name.replace(/-\d+$/, '');
    if (out[id]) out[id].avgCpuPercent += Math.round(cpu);
  }
  return out;
}

/**
 * Backlog: `events` produced to raw while validate and merge-compaction are stopped, then both
 * started again; reports the drain time, the drain rate, each process's peak RSS (VmHWM) while it
 * drains, restarts, and whether bronze then holds exactly the load's and the backlog's events.
 * `load` is what the load phase acknowledged; a load that did not drain leaves the backlog
 * unjudged (its remaining events would be credited to the backlog's drain).
 */
export async function runBacklog(stack: Stack, o: { events: number; stream: EventStream; drainTimeoutMs: number; brokerPid?: number; load: { acked: number; digest: bigint; drained: boolean }; progress: (l: string) => void }) {
  if (!o.load.drained) {
    o.progress('backlog: skipped, the load did not drain');
    return { ran: false as const, events: o.events, skipped: 'the load phase did not drain: its remaining events would be counted as the backlog\'s' };
  }
  // The load's stream goes on: entities keep their version sequences, as a real backlog would.
  // (A stream of its own reused the load's entity keys with versions from 1 again, so silver
  // ignored those updates and the drain flattered tier 2.) Its duplicates land once in bronze.
  const { stream } = o;
  const raw = new RawSender(stack.options.brokers, stack.topics.raw, undefined);
  const before = o.load.acked;
  await stack.stopInstances('validate');
  await stack.stopInstances('merge-compaction');
  o.progress(`backlog: producing ${o.events} events into raw with validate and merge-compaction stopped`);
  const p0 = Date.now();
  const inFlight = new Set<Promise<void>>();
  /** Events bronze must hold once the backlog drained (duplicates excluded), and their id digest. */
  let unique = 0;
  let digest = 0n;
  for (let sent = 0; sent < o.events; ) {
    const n = Math.min(5000, o.events - sent);
    sent += n;
    const batch = stream.take(n);
    for (const e of batch) {
      if (e.kind !== 'valid') continue;
      unique++;
      digest += idDigest(e.eventId);
    }
    const p: Promise<void> = raw.send(batch).finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await raw.close();
  const produceSeconds = (Date.now() - p0) / 1000;
  o.progress(`backlog: ${o.events} events in raw after ${produceSeconds.toFixed(1)} s; starting validate and merge-compaction`);
  const watcher = new ProcWatcher();
  const peak: Record<string, number> = {};
  const timeline: { t: number; visible: number; rss: Record<string, number> }[] = [];
  const d0 = Date.now();
  await Promise.all([stack.startInstances('validate'), stack.startInstances('merge-compaction')]);
  // Taken once both run again: a stopped service's process is replaced, its count starts over.
  const restartsAtStart = restartsOf(stack);
  let visible = before;
  const deadline = d0 + o.drainTimeoutMs;
  while (visible < before + unique && Date.now() < deadline) {
    await sleep(1000);
    const read = await visibleRows(stack);
    if (!Number.isNaN(read)) visible = read;
    const procs = watcher.sample({ ...stack.pids(), ...(o.brokerPid ? { broker: o.brokerPid } : {}) });
    const rss = Object.fromEntries(Object.entries(procs).map(([k, v]) => [k, v.rssMiB]));
    addPeaks(peak, procs);
    timeline.push({ t: +((Date.now() - d0) / 1000).toFixed(1), visible: visible - before, rss });
    if (timeline.length % 10 === 0) o.progress(`backlog drain t=${timeline[timeline.length - 1].t}s: ${visible - before}/${unique} visible; RSS MiB ${JSON.stringify(rss)}`);
  }
  const drainSeconds = (Date.now() - d0) / 1000;
  const drained = visible >= before + unique;
  const delivered = await bronzeCounts(stack.lakeRoot);
  const want = before + unique;
  return {
    ran: true as const,
    events: o.events,
    uniqueEvents: unique,
    produceSeconds: +produceSeconds.toFixed(1),
    drained,
    drainSeconds: +drainSeconds.toFixed(1),
    drainEventsPerSecond: Math.round((visible - before) / drainSeconds),
    peakRssMiB: peak,
    restarts: restartsSince(stack, restartsAtStart),
    delivered: { bronzeRows: delivered.rows, bronzeEventIds: delivered.eventIds, want, exactlyOnce: delivered.rows === want && delivered.eventIds === want && delivered.digest === o.load.digest + digest },
    timeline,
  };
}
