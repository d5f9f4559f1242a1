import { columnsOf, CONTRACTS, type ContractName } from '@sluice/contracts';
import { isSluiceError } from '@sluice/errors';
import { LakeQueryEngine, LakeTable, tableStorageFactory, type LakeRootS3Options, type Storage } from '@sluice/lake';
import { sleep } from '../bench/stack';
import { DLQ_HEADERS, REPLAY_HEADER, type DlqMessage } from '../dlq/dlq-record';
import { readDlq, readTopic } from '../dlq/read-dlq';
import { flatten, goldRowId, type Oracle } from '../generator';

/**
 * Where the audited tables are: a lake root (a directory or `s3://bucket/prefix`) and, for S3,
 * how to reach the server itself (never through a fault proxy).
 */
export interface LakeLocation {
  readonly root: string;
  readonly s3?: LakeRootS3Options;
}

/** Where the pipeline under audit keeps its state. */
export interface AuditTarget {
  readonly lake: LakeLocation;
  readonly brokers: string;
  readonly dlqTopic: string;
  /** The raw and valid topics, to say where events missing from bronze stopped (optional). */
  readonly topics?: { readonly raw: string; readonly valid: (contract: ContractName) => string };
  /** DLQ records expected without any event_id (poison bytes the scenario produced to raw). */
  readonly poisonWithoutId?: number;
  /** Poison records produced to raw with an event_id: each must be in the DLQ exactly once, any reason. */
  readonly poisonIds?: ReadonlySet<string>;
  /** Every poison record produced to raw, by `topic/partition/offset`: each in the DLQ exactly once, cut when `cut`. */
  readonly poisonSources?: ReadonlyMap<string, { readonly name: string; readonly cut: boolean }>;
  /** Where the load's invalid events sent straight to raw were delivered (`topic/partition/offset` by event_id). */
  readonly invalidSources?: ReadonlyMap<string, string>;
  /** DLQ records the DLQ tool replayed to raw, still invalid: each must be back in the DLQ once, as a failed replay. */
  readonly replaysSent?: number;
  /** Reads the DLQ (default: the topic, from the broker); a test of the audit hands its records in. */
  readonly readDlq?: () => ReturnType<typeof readDlq>;
}

/** The outcome of an audit: counts seen and every difference from the oracle (empty = equal). */
export interface AuditReport {
  readonly problems: string[];
  readonly bronzeRows: Record<string, number>;
  readonly silverRows: Record<string, number>;
  readonly dlqRecords: number;
  /**
   * Dead letters beyond the first of an invalid event that was produced to raw more than once
   * (each from its own raw record): a raw batch the load's sender sent again through a new
   * producer after a lost acknowledgement. Each raw record is still dead-lettered once.
   */
  readonly dlqRawRepeats: number;
  /** Seconds the pipeline needed after the load to reach the oracle (or the timeout). */
  readonly drainSeconds: number;
}

let engine: Promise<LakeQueryEngine> | undefined;

// One storage per table of a lake: an S3 storage holds a client (sockets), and the audit polls.
const storages = new Map<string, Storage>();

function storageOf(lake: LakeLocation, name: string): Storage {
  const key = `${lake.root}\u0000${name}`;
  let storage = storages.get(key);
  if (!storage) storages.set(key, (storage = tableStorageFactory(lake.root, lake.s3)(name)));
  return storage;
}

/** A table of the lake, or undefined when it does not exist (yet). */
export async function openTable(lake: LakeLocation, name: string): Promise<LakeTable | undefined> {
  try {
    return await LakeTable.open(storageOf(lake, name));
  } catch (err) {
    if (isSluiceError(err, 'LAKE_NOT_FOUND')) return undefined;
    throw err;
  }
}

/** Rows of a table through its current view (silver: table ⊕ pending tail, as query-api serves it). */
export async function readTable(lake: LakeLocation, name: string, sql: string): Promise<Record<string, unknown>[]> {
  const table = await openTable(lake, name);
  if (!table) return [];
  const view = await table.currentView();
  engine ??= LakeQueryEngine.create();
  const session = await (await engine).open({ t: view });
  try {
    return await session.queryJson(sql);
  } finally {
    session.close();
  }
}

/**
 * True when silver has folded everything bronze holds (`fold:` = `bronze:` txns) and every gold
 * table has aggregated it (`gold:` = `bronze:` txns), on every partition.
 */
async function derivedCaughtUp(lake: LakeLocation, contract: ContractName): Promise<boolean> {
  const c = CONTRACTS[contract];
  const bronze = await openTable(lake, c.tables.bronze);
  if (!bronze) return false;
  const pairs = [...(await bronze.snapshot()).txnVersions()].filter(([id]) => id.startsWith('bronze:'));
  if (pairs.length === 0) return false;
  const derived: [string, string][] = [[c.tables.silver, 'fold:'], ...c.aggregates.map((a): [string, string] => [a.table, 'gold:'])];
  for (const [name, prefix] of derived) {
    const table = await openTable(lake, name);
    if (!table) return false;
    const done = (await table.snapshot()).txnVersions();
    if (!pairs.every(([id, v]) => done.get(id.replace(/^bronze:/, prefix)) === v)) return false;
  }
  return true;
}

function normal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return v;
  return JSON.stringify(v);
}

/** Prefix of the epoch-millisecond copy of a timestamp column in the audit's silver read. */
const MS_PREFIX = '__audit_ms_';

const EVENT_ID_IN_TEXT = /"event_id"\s*:\s*"([^"]+)"/;

/**
 * Compares the pipeline with the oracle: bronze holds every acknowledged valid event exactly
 * once, as it was sent, and nothing else; silver equals the oracle row for row (every column of the contract, a field
 * an older version lacks as null, timestamps to the millisecond); every gold table equals the oracle's aggregate row for row (window, group, measures);
 * the DLQ holds every invalid event produced to raw exactly once, with its reason.
 */
export async function diffAgainstOracle(target: AuditTarget, oracle: Oracle): Promise<Omit<AuditReport, 'drainSeconds'>> {
  const problems: string[] = [];
  // Read at most once per audit, and only when some event is missing from bronze.
  let raw: Promise<Buffer[] | string> | undefined;
  const rawValues = () => (raw ??= target.topics ? valuesOf(target.brokers, target.topics.raw, 'read_uncommitted') : Promise.resolve('no topics given'));
  const bronzeRows: Record<string, number> = {};
  const silverRows: Record<string, number> = {};
  for (const contract of oracle.contracts()) {
    const c = CONTRACTS[contract];
    const want = oracle.bronze(contract);
    // Every column of the contract, a field an older version lacks as null, timestamps compared as
    // epoch milliseconds; bronze's event_date is the UTC date of event_time.
    const columns = columnsOf(c);
    const stamps = columns.filter((col) => col.type === 'timestamp-millis').map((col) => col.name);
    const select = `SELECT *${stamps.map((n) => `, epoch_ms("${n}") AS "${MS_PREFIX}${n}"`).join('')} FROM t`;
    const differs = (row: Record<string, unknown>, flat: Record<string, unknown>) =>
      !columns.every(({ name }) => (stamps.includes(name) ? Number(row[`${MS_PREFIX}${name}`]) === flat[name] : normal(row[name]) === normal(flat[name])));
    const bronze = await readTable(target.lake, c.tables.bronze, `${select} ORDER BY event_id`);
    const events = oracle.events(contract);
    /** Rows per event_id. */
    const got = new Map<string, number>();
    let unlike = 0;
    let unlikeExample = '';
    for (const row of bronze) {
      const id = String(row.event_id);
      got.set(id, (got.get(id) ?? 0) + 1);
      const e = events.get(id);
      if (e === undefined) continue; // counted below as an event nobody acknowledged
      const flat = flatten(e);
      if (differs(row, flat) || String(row.event_date) !== new Date(e.event_time).toISOString().slice(0, 10)) {
        unlike++;
        unlikeExample ||= `${id}: got ${JSON.stringify(row)} want ${JSON.stringify(flat)}`;
      }
    }
    if (unlike) problems.push(`${c.tables.bronze}: ${unlike} rows differ from the events acknowledged, e.g. ${unlikeExample.slice(0, 600)}`);
    bronzeRows[contract] = bronze.length;
    const dupes = [...got].filter(([, n]) => n > 1);
    const missing = [...want].filter((id) => !got.has(id));
    const extra = [...got.keys()].filter((id) => !want.has(id));
    if (dupes.length) problems.push(`${c.tables.bronze}: ${dupes.length} event_ids duplicated (e.g. ${dupes[0][0]} ×${dupes[0][1]})`);
    if (missing.length) {
      problems.push(`${c.tables.bronze}: ${missing.length} acknowledged events lost (e.g. ${missing[0]})${target.topics ? `; ${await locate(target.brokers, target.topics, contract, missing, rawValues)}` : ''}`);
    }
    if (extra.length) problems.push(`${c.tables.bronze}: ${extra.length} events nobody acknowledged (e.g. ${extra[0]})`);

    const wantSilver = oracle.silver(contract);
    const silver = await readTable(target.lake, c.tables.silver, select);
    silverRows[contract] = silver.length;
    const keyOf = (r: Record<string, unknown>) => (c.kind === 'append' ? String(r.event_id) : c.entityKey(r as never));
    const gotSilver = new Map(silver.map((r) => [keyOf(r), r]));
    if (gotSilver.size !== silver.length) problems.push(`${c.tables.silver}: ${silver.length - gotSilver.size} duplicate keys`);
    if (gotSilver.size !== wantSilver.size) problems.push(`${c.tables.silver}: ${gotSilver.size} rows, oracle ${wantSilver.size}`);
    let wrong = 0;
    let example = '';
    for (const [key, e] of wantSilver) {
      const row = gotSilver.get(key);
      const flat = flatten(e);
      const same = row !== undefined && !differs(row, flat);
      if (!same) {
        wrong++;
        example ||= `${key}: got ${JSON.stringify(row)} want ${JSON.stringify(flat)}`;
      }
    }
    if (wrong) problems.push(`${c.tables.silver}: ${wrong} rows differ from the oracle, e.g. ${example.slice(0, 600)}`);

    for (const { aggregate, rows: wantGold } of oracle.gold(contract)) {
      const gold = await readTable(target.lake, aggregate.table, 'SELECT * FROM t');
      const gotGold = new Map(gold.map((r) => [goldRowId(Number(r.window_ms), aggregate.groupBy.map((g) => r[g])), r]));
      let bad = 0;
      let goldExample = '';
      for (const w of wantGold) {
        const r = gotGold.get(goldRowId(w.windowMs, aggregate.groupBy.map((g) => w.group[g])));
        if (r === undefined || !aggregate.measures.every((m) => Number(r[m.name]) === w.measures[m.name])) {
          bad++;
          goldExample ||= `${JSON.stringify(w)} got ${JSON.stringify(r)}`;
        }
      }
      if (gold.length !== wantGold.length) problems.push(`${aggregate.table}: ${gold.length} rows, oracle ${wantGold.length}`);
      if (bad) problems.push(`${aggregate.table}: ${bad} rows differ from the oracle, e.g. ${goldExample.slice(0, 600)}`);
    }
  }

  const dlq = await (target.readDlq ?? (() => readDlq(target.brokers, target.dlqTopic, 120_000)))();
  const seen = new Map<string, number>();
  let unidentified = 0;
  let wrongReason = 0;
  let reasonExample = '';
  // Each raw record is dead-lettered once (validate's transactions): its coordinates say so
  // whether or not its bytes carry an event_id. merge-compaction's dead letters of valid records
  // are at-least-once by design (apps/merge-compaction/src/tier1/dead-letters.ts) and are left out.
  const sourceOf = (m: (typeof dlq)[number]): string => {
    const header = (name: string) => m.headers[name]?.toString('utf8') ?? '?';
    return `${header(DLQ_HEADERS.sourceTopic)}/${header(DLQ_HEADERS.sourcePartition)}/${header(DLQ_HEADERS.sourceOffset)}`;
  };
  /** The source records each dead-lettered event_id came from. */
  const sourcesOf = new Map<string, Set<string>>();
  const bySource = new Map<string, { count: number; cut: boolean }>();
  for (const m of dlq) {
    const source = sourceOf(m);
    const entry = bySource.get(source) ?? { count: 0, cut: false };
    entry.count++;
    entry.cut ||= m.headers[DLQ_HEADERS.truncated] !== undefined;
    bySource.set(source, entry);
  }
  const rawPrefix = target.topics ? `${target.topics.raw}/` : '';
  const sourceDupes = [...bySource].filter(([at, e]) => e.count > 1 && at.startsWith(rawPrefix));
  if (sourceDupes.length) problems.push(`DLQ: ${sourceDupes.length} source records dead-lettered more than once (e.g. ${sourceDupes[0][0]} ×${sourceDupes[0][1].count})`);
  for (const [at, poison] of target.poisonSources ?? []) {
    const got = bySource.get(at);
    if (got === undefined) problems.push(`DLQ: poison "${poison.name}" produced to ${at} is not in the DLQ`);
    else if (got.cut !== poison.cut) problems.push(`DLQ: poison "${poison.name}" from ${at} ${poison.cut ? 'is not marked cut (sluice-dlq-truncated)' : 'is marked cut but fits'}`);
  }
  // Every dead letter says where it came from (validate's and tier 1's alike): the checks by
  // source above cannot see one that does not.
  const sourceless = dlq.filter((m) => [DLQ_HEADERS.sourceTopic, DLQ_HEADERS.sourcePartition, DLQ_HEADERS.sourceOffset].some((h) => m.headers[h] === undefined)).length;
  if (sourceless) problems.push(`DLQ: ${sourceless} records without their source topic, partition and offset headers`);
  let altered = 0;
  let alteredExample = '';
  for (const m of dlq) {
    const id = EVENT_ID_IN_TEXT.exec(m.value?.toString('utf8') ?? '')?.[1];
    if (!id) {
      unidentified++;
      continue;
    }
    seen.set(id, (seen.get(id) ?? 0) + 1);
    const sources = sourcesOf.get(id) ?? new Set<string>();
    sources.add(sourceOf(m));
    sourcesOf.set(id, sources);
    const reason = m.headers[DLQ_HEADERS.reason]?.toString('utf8');
    const want = oracle.dlq.get(id);
    if (want !== undefined && reason !== want) {
      wrongReason++;
      reasonExample ||= `${id}: ${reason}, want ${want}`;
    }
    // The DLQ keeps the original bytes, so a fixed event can be replayed as it was sent.
    const body = oracle.dlqBodies.get(id);
    if (body !== undefined && (m.value?.toString('utf8') !== body || m.headers[DLQ_HEADERS.truncated] !== undefined)) {
      altered++;
      alteredExample ||= `${id}: ${JSON.stringify(m.value?.toString('utf8').slice(0, 120))}`;
    }
  }
  if (altered) problems.push(`DLQ: ${altered} records do not hold the bytes their event was sent with (e.g. ${alteredExample})`);
  // Each invalid event sent straight to raw is dead-lettered from the record it was delivered as
  // (a dead letter naming a wrong offset was unique and present, and passed the checks above).
  let misplaced = 0;
  let misplacedExample = '';
  for (const [id, at] of target.invalidSources ?? []) {
    const from = sourcesOf.get(id);
    if (from === undefined || from.has(at)) continue; // a missing one is reported below
    misplaced++;
    misplacedExample ||= `${id}: delivered as ${at}, dead-lettered from ${[...from].join(', ')}`;
  }
  if (misplaced) problems.push(`DLQ: ${misplaced} dead letters name another source than the record their event was delivered as (e.g. ${misplacedExample})`);
  problems.push(...checkReplays(dlq, target));
  const poison = target.poisonIds ?? new Set<string>();
  const dlqMissing = [...oracle.dlq.keys(), ...poison].filter((id) => !seen.has(id));
  // An event_id dead-lettered more than once from as many raw records was produced to raw more
  // than once (the sender's at-least-once retries): counted, not a fault. From one raw record
  // more than once is validate's fault, reported by source above.
  let dlqRawRepeats = 0;
  for (const [id, n] of seen) if (n > 1 && sourcesOf.get(id)?.size === n) dlqRawRepeats += n - 1;
  const dlqExtra = [...seen.keys()].filter((id) => !oracle.dlq.has(id) && !poison.has(id));
  if (dlqMissing.length) problems.push(`DLQ: ${dlqMissing.length} invalid events missing (e.g. ${dlqMissing[0]})`);
  if (dlqExtra.length) problems.push(`DLQ: ${dlqExtra.length} records for events that were not invalid (e.g. ${dlqExtra[0]})`);
  if (wrongReason) problems.push(`DLQ: ${wrongReason} records with the wrong reason (e.g. ${reasonExample})`);
  const wantUnidentified = target.poisonWithoutId ?? 0;
  if (unidentified !== wantUnidentified) problems.push(`DLQ: ${unidentified} records without an event_id, want ${wantUnidentified}`);
  return { problems, bronzeRows, silverRows, dlqRecords: dlq.length, dlqRawRepeats };
}

/**
 * Every DLQ record the DLQ tool replayed came back once as a failed replay (`sluice-replay-of`
 * naming it), holding its bytes: none lost, none doubled by a crash while validate routed them.
 */
function checkReplays(dlq: readonly DlqMessage[], target: AuditTarget): string[] {
  const problems: string[] = [];
  const replays = dlq.filter((m) => m.headers[REPLAY_HEADER] !== undefined);
  const sent = target.replaysSent ?? 0;
  if (replays.length !== sent) problems.push(`DLQ: ${replays.length} failed replays for ${sent} records replayed`);
  const at = new Map(dlq.map((m) => [`${target.dlqTopic}/${m.partition}/${m.offset}`, m]));
  const copies = new Map<string, number>();
  let unlike = 0;
  let example = '';
  for (const m of replays) {
    const of = m.headers[REPLAY_HEADER]!.toString('utf8');
    copies.set(of, (copies.get(of) ?? 0) + 1);
    const original = at.get(of);
    const same = original !== undefined && (original.value === null ? m.value === null : m.value !== null && original.value.equals(m.value));
    if (!same) {
      unlike++;
      example ||= `${of}: ${original === undefined ? 'no such DLQ record' : 'other bytes'}`;
    }
  }
  const doubled = [...copies].filter(([, n]) => n > 1);
  if (doubled.length) problems.push(`DLQ: ${doubled.length} replayed records came back more than once (e.g. ${doubled[0][0]} ×${doubled[0][1]})`);
  if (unlike) problems.push(`DLQ: ${unlike} failed replays do not hold the bytes of the record they name (e.g. ${example})`);
  return problems;
}

/**
 * Where events missing from bronze stopped: how many the raw topic holds (any isolation) and how
 * many the contract's valid topic holds committed. In valid but not in bronze points at
 * merge-compaction; in raw only, at validate; in neither, at the producer or the broker.
 */
async function locate(
  brokers: string,
  topics: NonNullable<AuditTarget['topics']>,
  contract: ContractName,
  missing: readonly string[],
  rawValues: () => Promise<Buffer[] | string>,
): Promise<string> {
  const ids = missing.slice(0, 200); // a byte search per id and record: a sample says enough
  const count = (values: Buffer[] | string): number | string => (typeof values === 'string' ? values : ids.filter((id) => values.some((v) => v.includes(id))).length);
  const raw = count(await rawValues());
  const valid = count(await valuesOf(brokers, topics.valid(contract), 'read_committed'));
  return `of ${ids.length === missing.length ? 'these' : `the first ${ids.length}`}, ${raw} are in raw and ${valid} committed in ${topics.valid(contract)}`;
}

/** A topic's record values, or why it could not be read (bounded to 30 s). */
async function valuesOf(brokers: string, topic: string, isolation: 'read_committed' | 'read_uncommitted'): Promise<Buffer[] | string> {
  try {
    return (await readTopic(brokers, topic, 30_000, isolation)).map((m) => m.value).filter((v): v is Buffer => v !== null);
  } catch (err) {
    return `unread (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** How long the lake must stay equal to the oracle after the first clean diff. */
const SETTLE_MS = 5_000;

/**
 * Waits until the pipeline has caught up with the oracle (bronze counts reached, silver and gold
 * at bronze's offsets) or `timeoutMs` passed, then diffs; a clean diff is taken again
 * `settleMs` later. The first read comes at the first moment the counts match, and a row written
 * after it (a consumer re-delivering after its restart, a zombie writer, a late duplicate) would
 * otherwise pass unseen.
 */
export async function auditWhenDrained(target: AuditTarget, oracle: Oracle, timeoutMs: number, settleMs = SETTLE_MS): Promise<AuditReport> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let timedOut = false;
  for (;;) {
    let drained = true;
    try {
      for (const contract of oracle.contracts()) {
        const rows = await readTable(target.lake, CONTRACTS[contract].tables.bronze, 'SELECT count(DISTINCT event_id) AS n FROM t');
        if (Number(rows[0]?.n ?? 0) < oracle.bronze(contract).size || !(await derivedCaughtUp(target.lake, contract))) {
          drained = false;
          break;
        }
      }
    } catch {
      drained = false; // a table mid-creation or the lake briefly unreadable: look again
    }
    if (drained) break;
    if (Date.now() > deadline) {
      timedOut = true;
      break;
    }
    await sleep(1000);
  }
  const drainSeconds = (Date.now() - started) / 1000;
  // The drain watches the tables only: the DLQ may still be writing its last records (a replay
  // routed late). A diff that is not clean is taken again until the deadline; what is really
  // wrong (a duplicate, a lost event) stays wrong and is reported then.
  let first = await diffAgainstOracle(target, oracle);
  while (!timedOut && first.problems.length > 0 && Date.now() < deadline) {
    await sleep(2000);
    first = await diffAgainstOracle(target, oracle);
  }
  if (!timedOut && first.problems.length === 0) {
    await sleep(settleMs);
    const again = await diffAgainstOracle(target, oracle);
    const later = again.problems.map((p) => `${Math.round(settleMs / 1000)} s after a clean audit: ${p}`);
    return { ...again, problems: later, drainSeconds };
  }
  const diff = first;
  if (!timedOut || diff.problems.length === 0) return { ...diff, drainSeconds };
  // Said first: "lost" below may then be a stall (a stage that stopped moving), not a loss.
  const stalled = `not drained within ${Math.round(timeoutMs / 1000)} s of the load's end: what follows may be a stalled stage rather than lost events`;
  return { ...diff, problems: [stalled, ...diff.problems], drainSeconds };
}
