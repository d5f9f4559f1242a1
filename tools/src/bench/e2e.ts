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
  readonly procs: Record<string, { cpuPercent: number; rssMb: number; peakRssMb: number }>;
}

/** Percentiles of a list of numbers. */
export function percentiles(values: readonly number[]): { p50: number; p95: number; p99: number; max: number; n: number } {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => (s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]);
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: s[s.length - 1] ?? NaN, n: s.length };
}

async function visibleRows(stack: Stack): Promise<number> {
  let total = 0;
  for (const c of CONTRACT_NAMES) {
    const r = await fetch(`${stack.queryUrl}/v1/tables/${CONTRACTS[c].tables.bronze}`, { headers: { authorization: `Bearer ${DEMO_QUERY_TOKEN}` }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (r?.status === 200) total += Number(((await r.json()) as { rowCount?: number }).rowCount ?? 0);
  }
  return total;
}

/** Rows and distinct event ids of every bronze table, read from the lake (not through query-api's metadata). */
async function bronzeCounts(lakeRoot: string): Promise<{ rows: number; eventIds: number }> {
  let rows = 0;
  let eventIds = 0;
  for (const c of CONTRACT_NAMES) {
    const [r] = await readTable({ root: lakeRoot }, CONTRACTS[c].tables.bronze, 'SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM t');
    rows += Number(r?.n ?? 0);
    eventIds += Number(r?.d ?? 0);
  }
  return { rows, eventIds };
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

/** The stream of the load: every contract, duplicates, no invalid events (ingest would refuse them). */
export function loadStream(seed: number): EventStream {
  return new EventStream({ seed, runId: `b${seed}`, clock: () => Date.now(), invalidRate: 0 });
}

/**
 * The measured run: ceiling first (bare pass-through), then Sluice under load for `seconds`
 * with per-second samples (acked and visible throughput, consumer lag, CPU/RSS per process),
 * freshness probes (a marker order per 500 ms, looked up through query-api until visible), the
 * drain after the load, the lake's file layout, and optionally a backlog drain.
 */
export async function runE2e(o: E2eOptions) {
  const { stack, stream } = o;
  // The ceiling's sample values come from a stream of their own: taken from `stream`, the
  // duplicates it had scheduled for them went to ingest without their originals, and bronze held
  // rows nobody counted as acknowledged (6 per run), which hid as many lost events.
  const values = new EventStream({ seed: o.seed + 1_000_003, runId: `c${o.seed}`, clock: () => Date.now(), invalidRate: 0 }).take(2000).map((e) => e.body);

  o.progress(`ceiling: ${o.ceilingEvents} records produce → consume → produce → consume, no processing`);
  const ceiling: CeilingResult = await measurePassThrough({ brokers: stack.options.brokers, values, events: o.ceilingEvents, partitions: 8 });
  o.progress(`ceiling: ${Math.round(ceiling.eventsPerSecond)} events/s`);

  const admin = new KafkaAdmin({ brokers: stack.options.brokers, clientId: 'sluice-bench' });
  const watcher = new ProcWatcher();
  const pids = () => ({ ...stack.pids(), ...(o.brokerPid ? { broker: o.brokerPid } : {}), 'load-driver': process.pid });
  const timeline: Sample[] = [];
  const freshness: [number, number][] = [];
  const probes: { key: string; createdAt: number }[] = [];
  let probeN = 0;
  let lastProbe = 0;
  /** Unique valid events acknowledged (duplicates excluded: bronze holds each once). */
  let acked = 0;
  const started = Date.now();
  const t = () => (Date.now() - started) / 1000;

  // A probe is an order of its own entity; its lookup through query-api says when it became visible.
  const next = (): GeneratedEvent => {
    const now = Date.now();
    if (now - lastProbe >= 500) {
      lastProbe = now;
      const key = `probe-${o.seed}-${probeN++}`;
      const event = { event_id: `b${o.seed}-probe-${probeN}`, event_time: now, producer: 'bench', schema_version: 2, version: 1, op: 'upsert' as const, order_id: key, payload: { customer_id: 'probe', status: 'paid', total_cents: 1, currency: 'EUR', item_count: 1, coupon_code: null } };
      probes.push({ key, createdAt: now });
      return { seq: -1, contract: 'orders', key, eventId: event.event_id, kind: 'valid', event, body: JSON.stringify({ contract: 'orders', ...event, event_time: new Date(now).toISOString() }) };
    }
    return stream.next();
  };

  let sampling = true;
  let prev = { acked: 0, visible: 0, at: Date.now() };
  const sampler = (async () => {
    while (sampling) {
      const [visible, lagValidate, lagMerge] = await Promise.all([visibleRows(stack), lagOf(admin, `${stack.options.prefix}validate`, [stack.topics.raw]), mergeLag(admin, stack)]);
      const now = Date.now();
      const dt = (now - prev.at) / 1000;
      const s: Sample = {
        t: +t().toFixed(1),
        acked,
        visible,
        ackedPerSecond: Math.round((acked - prev.acked) / dt),
        visiblePerSecond: Math.max(0, Math.round((visible - prev.visible) / dt)),
        lagValidate,
        lagMerge,
        procs: watcher.sample(pids()),
      };
      prev = { acked, visible, at: now };
      timeline.push(s);
      if (timeline.length % 5 === 0) {
        const rss = Object.entries(s.procs).map(([k, v]) => `${k} ${Math.round(v.rssMb)}MB/${Math.round(v.cpuPercent)}%`).join(', ');
        const f = percentiles(freshness.slice(-20).map(([, v]) => v));
        o.progress(`t=${s.t}s acked ${s.acked} (${s.ackedPerSecond}/s) visible ${s.visible} (${s.visiblePerSecond}/s) lag raw ${s.lagValidate} valid ${s.lagMerge} freshness p50 ${f.p50}s; ${rss}`);
      }
      await sleep(Math.max(0, 1000 - (Date.now() - now)));
    }
  })();
  const prober = (async () => {
    while (sampling || probes.length > 0) {
      for (let k = 0; k < 3 && probes.length > 0; k++) {
        const p = probes[0];
        const r = await fetch(`${stack.queryUrl}/v1/tables/${CONTRACTS.orders.tables.silver}/entities/${p.key}`, { headers: { authorization: `Bearer ${DEMO_QUERY_TOKEN}` }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
        if (r) await r.arrayBuffer();
        if (r?.status !== 200) {
          if (Date.now() - p.createdAt > o.drainTimeoutMs) probes.shift();
          break;
        }
        freshness.push([+((p.createdAt - started) / 1000).toFixed(1), (Date.now() - p.createdAt) / 1000]);
        probes.shift();
      }
      await sleep(100);
    }
  })();

  const http = new HttpSender(() => stack.ingestUrl, DEMO_API_KEY, undefined);
  o.progress(`load: ${o.rate || 'max'} events/s offered for ${o.seconds} s, batches of ${o.batchSize}, ${o.concurrency} in flight`);
  await driveLoad({ next, sender: http, rate: o.rate, durationMs: o.seconds * 1000, batchSize: o.batchSize, concurrency: o.concurrency, onAcked: (_at, b) => (acked += b.filter((e) => e.kind === 'valid').length) });
  const loadSeconds = t();
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
  const steady = timeline.filter((s) => s.t > 10 && s.t <= loadSeconds);
  const perProc: Record<string, { peakRssMb: number; avgCpuPercent: number }> = {};
  for (const s of timeline) {
    for (const [name, v] of Object.entries(s.procs)) {
      const id = name.replace(/-\d+$/, '');
      const cur = perProc[id] ?? { peakRssMb: 0, avgCpuPercent: 0 };
      // VmHWM: the peak between samples too (samples come every 1-6 s).
      perProc[id] = { peakRssMb: Math.max(cur.peakRssMb, v.rssMb, v.peakRssMb), avgCpuPercent: cur.avgCpuPercent + v.cpuPercent / timeline.length };
    }
  }
  for (const v of Object.values(perProc)) v.avgCpuPercent = Math.round(v.avgCpuPercent);
  // A probe that never became visible counts as infinitely late (JSON null), not as absent: the
  // percentiles of the probes that arrived alone are a lower bound.
  const probesTimedOut = probeN - freshness.length;
  const fresh = percentiles([...freshness.map(([, v]) => v), ...new Array<number>(probesTimedOut).fill(Infinity)]);
  // Delivery, read from the lake itself: bronze must hold every acknowledged event exactly once.
  const delivered = await bronzeCounts(stack.lakeRoot);
  const sustained = visibleEnd / totalSeconds;
  const result = {
    machine: { cpus: cpus().length, loadavgAtEnd: loadavg().map((x) => +x.toFixed(2)) },
    ceiling,
    sluice: {
      offeredRate: o.rate,
      loadSeconds: +loadSeconds.toFixed(1),
      acked,
      ackedPerSecond: Math.round(acked / loadSeconds),
      visibleAtLoadEnd,
      visibleAtEnd: visibleEnd,
      drainSeconds: +drainSeconds.toFixed(1),
      sustainedEventsPerSecond: Math.round(sustained),
      steadyVisiblePerSecond: Math.round(steady.reduce((s, x) => s + x.visiblePerSecond, 0) / Math.max(1, steady.length)),
      ratioToCeiling: +(sustained / ceiling.eventsPerSecond).toFixed(3),
      freshnessSeconds: fresh,
      probesTimedOut,
      delivered: { acked, bronzeRows: delivered.rows, bronzeEventIds: delivered.eventIds, drained: !Number.isNaN(drainSeconds), exactlyOnce: delivered.rows === acked && delivered.eventIds === acked },
      maxLag: { validate: Math.max(0, ...timeline.map((s) => s.lagValidate || 0)), merge: Math.max(0, ...timeline.map((s) => s.lagMerge || 0)) },
      processes: perProc,
      retries: http.retries,
    },
    files: await fileLayout(stack.lakeRoot),
    timeline,
    freshness,
  };
  return result;
}

/**
 * Backlog: `events` produced to raw while validate and merge-compaction are stopped, then both
 * started again; reports the drain time, the drain rate and each process's peak RSS while it drains.
 */
export async function runBacklog(stack: Stack, o: { events: number; stream: EventStream; drainTimeoutMs: number; brokerPid?: number; progress: (l: string) => void }) {
  // The load's stream goes on: entities keep their version sequences, as a real backlog would.
  // (A stream of its own reused the load's entity keys with versions from 1 again, so silver
  // ignored those updates and the drain flattered tier 2.) Its duplicates land once in bronze.
  const { stream } = o;
  const raw = new RawSender(stack.options.brokers, stack.topics.raw, undefined);
  const before = await visibleRows(stack);
  await stack.stop('validate');
  await stack.stop('merge-compaction');
  o.progress(`backlog: producing ${o.events} events into raw with validate and merge-compaction stopped`);
  const p0 = Date.now();
  const inFlight = new Set<Promise<void>>();
  /** Events bronze must hold once the backlog drained (duplicates excluded). */
  let unique = 0;
  for (let sent = 0; sent < o.events; ) {
    const n = Math.min(5000, o.events - sent);
    sent += n;
    const batch = stream.take(n);
    unique += batch.filter((e) => e.kind === 'valid').length;
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
  await Promise.all([stack.start('validate'), stack.start('merge-compaction')]);
  let visible = before;
  const deadline = d0 + o.drainTimeoutMs;
  while (visible < before + unique && Date.now() < deadline) {
    await sleep(1000);
    visible = await visibleRows(stack);
    const procs = watcher.sample({ ...stack.pids(), ...(o.brokerPid ? { broker: o.brokerPid } : {}) });
    const rss = Object.fromEntries(Object.entries(procs).map(([k, v]) => [k, v.rssMb]));
    for (const [k, v] of Object.entries(rss)) peak[k] = Math.max(peak[k] ?? 0, v);
    timeline.push({ t: +((Date.now() - d0) / 1000).toFixed(1), visible: visible - before, rss });
    if (timeline.length % 10 === 0) o.progress(`backlog drain t=${timeline[timeline.length - 1].t}s: ${visible - before}/${unique} visible; RSS ${JSON.stringify(rss)}`);
  }
  const drainSeconds = (Date.now() - d0) / 1000;
  const drained = visible >= before + unique;
  return { events: o.events, uniqueEvents: unique, produceSeconds: +produceSeconds.toFixed(1), drained, drainSeconds: +drainSeconds.toFixed(1), drainEventsPerSecond: Math.round((visible - before) / drainSeconds), peakRssMb: peak, timeline };
}
