import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CONTRACTS, encodeSingleObject, validTopicName, type AnyContract } from '@sluice/contracts';
import { KafkaAdmin, KafkaProducer, TransactionalProducer } from '@sluice/kafka';
import { LakeQueryEngine, LakeTable, tableStorageFactory, type Storage, type TableStorageFactory } from '@sluice/lake';
import { createTelemetry, type Telemetry } from '@sluice/telemetry';
import { testBrokers, testS3 } from '@sluice/testing';
import { build, type MergeApp } from '../../src/app';
import { loadMergeConfig, type MergeConfig } from '../../src/config';
import { expectedBronze, expectedGold, expectedSilver, flatten, type OracleContractSpec, type OracleEvent, type Send, type StreamOptions } from '../../src/oracle/oracle';

/** Broker address from the environment; a missing variable fails the test, never skips it. */
export const brokers = testBrokers;

/** A fresh directory for one test's tables. */
export function tempDir(label: string): string {
  const base = process.env.SLUICE_TEST_DIR ?? os.tmpdir();
  return mkdtempSync(path.join(base, `mc-${label}-`));
}

/** Removes a test directory. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A random name suffix. */
export function rand(): string {
  return randomBytes(4).toString('hex');
}

/** Partitions of test topics (a divisor of the silver bucket count). */
export const TEST_PARTITIONS = 4;

/** Oracle specs of the real contracts: payloads validate would accept. */
export const ORACLE_SPECS: Record<'orders' | 'clickstream' | 'inventory', OracleContractSpec> = {
  orders: {
    name: 'orders',
    entities: 120,
    tombstones: true,
    keyOf: (e) => ({ order_id: `ord-${e}` }),
    payload: (rng, e, _v, schemaVersion) => ({
      customer_id: `cust-${e % 17}`,
      status: rng.pick(['created', 'paid', 'shipped', 'delivered', 'cancelled']),
      total_cents: rng.int(100_000),
      currency: 'EUR',
      item_count: 1 + rng.int(5),
      ...(schemaVersion >= 2 ? { coupon_code: rng.chance(0.5) ? `C${rng.int(100)}` : null } : {}),
    }),
    // The second half of the stream is written with v2 (new optional coupon_code).
    schemaVersionAt: (i) => (i < 300 ? 1 : 2),
  },
  clickstream: {
    name: 'clickstream',
    entities: 40,
    tombstones: false,
    keyOf: (e) => ({ user_id: `user-${e}` }),
    payload: (rng, e) => ({
      session_id: `s-${e}-${rng.int(3)}`,
      event_type: rng.pick(['page_view', 'click', 'add_to_cart', 'search', 'checkout']),
      page: rng.pick(['/', '/cart', '/p/1', '/p/2']),
      referrer: rng.chance(0.3) ? '/' : null,
      duration_ms: rng.chance(0.5) ? rng.int(60_000) : null,
    }),
  },
  inventory: {
    name: 'inventory',
    entities: 60,
    tombstones: true,
    keyOf: (e) => ({ sku: `sku-${e % 20}`, warehouse_id: `wh-${Math.floor(e / 20)}` }),
    payload: (rng) => {
      const onHand = rng.int(1000);
      return { on_hand: onHand, reserved: rng.int(onHand + 1) };
    },
  },
};

/** Default knobs for oracle streams in tests: event times near midnight UTC (two dates). */
export function streamOptions(seed: number, eventsPerContract: number): StreamOptions {
  return {
    seed,
    eventsPerContract,
    duplicateRate: 0.08,
    reorderRate: 0.15,
    tombstoneRate: 0.12,
    startMs: Date.UTC(2026, 10, 28, 23, 59, 0),
    stepMs: 37,
    duplicateDistance: 200,
    // Older versions arrive up to 300 sends (~11 s of event time) after the newer: past batch,
    // commit and fold boundaries, and across midnight into the other date's partition.
    reorderDistance: 300,
  };
}

/** One test environment: topics, a table root (a temp directory, or a fresh S3 prefix), config and telemetry. */
export class TestEnv {
  readonly prefix = `mc${rand()}.`;
  readonly group = `mc-group-${rand()}`;
  readonly lakeRoot: string;
  readonly telemetry: Telemetry;
  /** Local directories to remove at close: the lake (local root) or the service's and the reader's S3 caches. */
  private readonly dirs: string[] = [];
  private readonly s3Env: Record<string, string> = {};
  private readonly storageFor: TableStorageFactory;
  private admin: KafkaAdmin | undefined;

  constructor(
    readonly label: string,
    readonly contracts: readonly AnyContract[],
    options: { s3?: boolean } = {},
  ) {
    if (options.s3) {
      const s3 = testS3();
      this.lakeRoot = `s3://${s3.bucket}/merge-compaction-test/${label}-${rand()}`;
      const serviceCache = tempDir(`${label}-cache`);
      const readerCache = tempDir(`${label}-reader`);
      this.dirs.push(serviceCache, readerCache);
      this.s3Env = {
        SLUICE_S3_ENDPOINT: s3.endpoint,
        SLUICE_S3_ACCESS_KEY_ID: s3.credentials.accessKeyId,
        SLUICE_S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
        SLUICE_S3_CACHE_DIR: serviceCache,
      };
      this.storageFor = tableStorageFactory(this.lakeRoot, { endpoint: s3.endpoint, credentials: s3.credentials, cacheDir: readerCache, cacheBytesPerTable: 256 * 1024 * 1024 });
    } else {
      this.lakeRoot = tempDir(label);
      this.dirs.push(this.lakeRoot);
      this.storageFor = tableStorageFactory(this.lakeRoot);
    }
    this.telemetry = createTelemetry({ service: 'merge-compaction', logLevel: (process.env.SLUICE_TEST_LOG_LEVEL as 'info') ?? 'silent' });
  }

  topic(contract: AnyContract): string {
    return `${this.prefix}${validTopicName(contract.name)}`;
  }

  /** Env vars of a merge-compaction process for this test. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      SLUICE_KAFKA_BROKERS: brokers(),
      SLUICE_MERGE_GROUP_ID: this.group,
      SLUICE_CONTRACTS: this.contracts.map((c) => c.name).join(','),
      SLUICE_TOPIC_PREFIX: this.prefix,
      SLUICE_LAKE_ROOT: this.lakeRoot,
      SLUICE_BATCH_MAX_MS: '300',
      SLUICE_MERGE_INTERVAL_MS: '300',
      SLUICE_GOLD_INTERVAL_MS: '300',
      SLUICE_COMPACTION_INTERVAL_MS: '1500',
      SLUICE_COMPACTION_MIN_FILES: '4',
      SLUICE_VACUUM_RETENTION_MS: '3600000',
      SLUICE_DEDUP_WATERMARK_MS: String(24 * 3600_000),
      SLUICE_RETRY_MAX_MS: '1000',
      OPS_PORT: '0',
      LOG_LEVEL: process.env.SLUICE_TEST_LOG_LEVEL ?? 'silent',
      ...this.s3Env,
      ...extra,
    };
  }

  config(extra: Record<string, string> = {}): MergeConfig {
    return loadMergeConfig(this.env(extra));
  }

  async createTopics(): Promise<void> {
    this.admin = new KafkaAdmin({ brokers: brokers() });
    for (const c of this.contracts) await this.admin.createTopic({ name: this.topic(c), partitions: TEST_PARTITIONS });
  }

  async close(): Promise<void> {
    if (this.admin) {
      await this.admin.deleteTopics(this.contracts.map((c) => this.topic(c))).catch(() => undefined);
      await this.admin.close();
    }
    await this.telemetry.shutdown();
    for (const dir of this.dirs) removeDir(dir);
  }

  /** The storage a table lives in (what `table()` opens). */
  storage(name: string): Storage {
    return this.storageFor(name);
  }

  /** Table handle (undefined until created). */
  async table(name: string): Promise<LakeTable | undefined> {
    try {
      return await LakeTable.open(this.storageFor(name));
    } catch {
      return undefined;
    }
  }
}

/**
 * Builds and starts a merge-compaction app in this process on `env`'s topics and lake, with
 * `extra` settings; it is added to `apps`, which the test stops at the end.
 */
export async function startApp(env: TestEnv, apps: MergeApp[], extra: Record<string, string> = {}, logger = env.telemetry.logger): Promise<MergeApp> {
  const app = await build({ config: env.config(extra), logger, metrics: env.telemetry.metrics, metricsText: () => env.telemetry.metricsText() });
  apps.push(app);
  await app.start();
  return app;
}

/**
 * One orders event of entity `id` at `version`, `atMs` after `t0`, as a send to its valid topic;
 * `customerId` fills the payload of an upsert (a delete has none).
 */
export function orderSend(t0: number, id: string, version: number, op: 'upsert' | 'delete', atMs: number, customerId = 'c1'): Send {
  const event: OracleEvent = {
    event_id: `${id}-v${version}-${op}`,
    event_time: t0 + atMs,
    producer: 'test',
    schema_version: 1,
    version,
    op,
    order_id: id,
    payload: op === 'delete' ? null : { customer_id: customerId, status: 'paid', total_cents: 100 * version, currency: 'EUR', item_count: 1 },
  };
  return { contract: 'orders', key: id, event, duplicate: false };
}

/** Encodes an oracle event as validate writes it: Avro single-object with its writer schema. */
export function encode(contract: AnyContract, event: OracleEvent): Buffer {
  const schema = (contract.versions.find((v) => v.version === event.schema_version) ?? contract.latest).schema;
  return encodeSingleObject(schema, event);
}

/**
 * Produces sends in order to the valid topics, keyed by entity key. With `transactional`, sends
 * go in transactions of `txnSize`, and every `abortEvery`-th transaction is first sent with
 * garbage and aborted (read_committed must hide it), then sent again and committed.
 */
export async function produce(
  env: TestEnv,
  sends: readonly Send[],
  options: { transactional?: boolean; txnSize?: number; abortEvery?: number; pauseMs?: number; chunk?: number; headers?: Record<string, string> } = {},
): Promise<void> {
  const records = sends.map((s) => {
    const contract = CONTRACTS[s.contract as keyof typeof CONTRACTS];
    return { topic: env.topic(contract), key: s.key, value: encode(contract, s.event), ...(options.headers ? { headers: options.headers } : {}) };
  });
  if (!options.transactional) {
    const producer = new KafkaProducer({ brokers: brokers(), lingerMs: 2 });
    await producer.connect();
    try {
      const chunk = options.chunk ?? records.length;
      for (let i = 0; i < records.length; i += chunk) {
        await producer.sendBatch(records.slice(i, i + chunk));
        if (options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
      }
    } finally {
      await producer.close();
    }
    return;
  }
  const producer = new TransactionalProducer({ brokers: brokers(), transactionalId: `mc-test-${rand()}` });
  await producer.connect();
  try {
    const size = options.txnSize ?? 200;
    for (let i = 0, n = 0; i < records.length; i += size, n++) {
      const slice = records.slice(i, i + size);
      if (options.abortEvery && n % options.abortEvery === 0) {
        await producer.begin();
        await producer.produce(slice.map((r) => ({ ...r, value: Buffer.from('aborted garbage, never visible') })));
        // Into the log first (abort purges what is still queued): read_committed must skip them.
        await producer.flush();
        await producer.abort();
      }
      await producer.begin();
      await producer.produce(slice);
      await producer.commit();
      if (options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
    }
  } finally {
    await producer.close();
  }
}

/** Polls `check` until it returns true or `timeoutMs` passes (then fails with `what`). */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
}

let engine: Promise<LakeQueryEngine> | undefined;
function queryEngine(): Promise<LakeQueryEngine> {
  engine ??= LakeQueryEngine.create();
  return engine;
}

/** Rows of a table as JSON values (silver through its current view: tail resolved). */
export async function readRows(env: TestEnv, name: string, sql: string): Promise<Record<string, unknown>[]> {
  const table = await env.table(name);
  if (!table) return [];
  const view = await table.currentView();
  const session = await (await queryEngine()).open({ t: view });
  try {
    return await session.queryJson(sql);
  } finally {
    session.close();
  }
}

/** Compares the pipeline's tables with the oracle; returns a list of differences (empty = equal). */
export async function diffAgainstOracle(env: TestEnv, sends: readonly Send[]): Promise<string[]> {
  const problems: string[] = [];
  const bronzeWant = expectedBronze(sends);
  const silverWant = expectedSilver(sends, (c) => CONTRACTS[c as keyof typeof CONTRACTS].kind);
  for (const contract of env.contracts) {
    const events = bronzeWant.get(contract.name) ?? [];
    // Bronze: every unique event exactly once.
    const bronze = await readRows(env, contract.tables.bronze, 'SELECT event_id, count(*) AS n FROM t GROUP BY event_id');
    const counts = new Map(bronze.map((r) => [String(r.event_id), Number(r.n)]));
    const dupes = [...counts].filter(([, n]) => n > 1);
    if (dupes.length) problems.push(`${contract.tables.bronze}: ${dupes.length} event_ids more than once (e.g. ${dupes[0][0]})`);
    const missing = events.filter((e) => !counts.has(e.event_id));
    if (missing.length) problems.push(`${contract.tables.bronze}: ${missing.length} events missing`);
    if (counts.size !== events.length) problems.push(`${contract.tables.bronze}: ${counts.size} distinct events, want ${events.length}`);
    // Bronze content: every field of each event as sent, event_time to the millisecond, and the
    // UTC date partition it fell into.
    const bronzeRows = new Map((await readRows(env, contract.tables.bronze, `SELECT * EXCLUDE (event_time, event_date), ${EXACT_TIME}, CAST(event_date AS VARCHAR) AS event_date FROM t`)).map((r) => [String(r.event_id), r]));
    let wrongBronze = 0;
    let bronzeExample = '';
    for (const e of events) {
      const row = bronzeRows.get(e.event_id);
      if (row === undefined) continue; // counted as missing above
      const want = { ...flatten(e), event_date: new Date(e.event_time).toISOString().slice(0, 10) };
      if (!Object.entries(want).every(([k, v]) => normal(row[k]) === normal(v))) {
        wrongBronze++;
        bronzeExample ||= `got ${JSON.stringify(row)} want ${JSON.stringify(want)}`;
      }
    }
    if (wrongBronze) problems.push(`${contract.tables.bronze}: ${wrongBronze} rows differ from their events, e.g. ${bronzeExample}`);
    // Silver: row for row, every field.
    const want = silverWant.get(contract.name) ?? new Map();
    const silver = await readRows(env, contract.tables.silver, `SELECT * EXCLUDE (event_time), ${EXACT_TIME} FROM t`);
    const keyOf = (r: Record<string, unknown>) => (contract.kind === 'append' ? String(r.event_id) : contract.entityKey(r));
    const got = new Map(silver.map((r) => [keyOf(r), r]));
    if (got.size !== silver.length) problems.push(`${contract.tables.silver}: duplicate keys`);
    if (got.size !== want.size) problems.push(`${contract.tables.silver}: ${got.size} rows, want ${want.size}`);
    let wrong = 0;
    let example = '';
    for (const [key, e] of want) {
      const row = got.get(key);
      const flat = flatten(e);
      const same =
        row !== undefined &&
        String(row.event_id) === e.event_id &&
        Number(row.version) === e.version &&
        Object.entries(flat).every(([k, v]) => normal(row[k]) === normal(v));
      if (!same) {
        wrong++;
        example ||= `${key}: got ${JSON.stringify(row)} want ${JSON.stringify(flat)}`;
      }
    }
    if (wrong) problems.push(`${contract.tables.silver}: ${wrong} rows differ, e.g. ${example}`);
    // Gold: every declared aggregate, row for row.
    for (const agg of contract.aggregates) {
      const wantGold = expectedGold(events, agg);
      const rows = await readRows(env, agg.table, 'SELECT * FROM t');
      const gotGold = new Map(rows.map((r) => [JSON.stringify([Number(r.window_ms), ...agg.groupBy.map((g) => r[g])]), r]));
      let bad = 0;
      let ex = '';
      for (const w of wantGold) {
        const r = gotGold.get(JSON.stringify([w.windowMs, ...agg.groupBy.map((g) => w.group[g])]));
        const ok = r !== undefined && agg.measures.every((m) => Number(r[m.name]) === w.measures[m.name]);
        if (!ok) {
          bad++;
          ex ||= `${JSON.stringify(w)} got ${JSON.stringify(r)}`;
        }
      }
      // Two rows of one window and group collapse into one map entry: the row count tells them apart.
      if (gotGold.size !== rows.length) problems.push(`${agg.table}: ${rows.length - gotGold.size} duplicate window rows`);
      if (gotGold.size !== wantGold.length) problems.push(`${agg.table}: ${gotGold.size} rows, want ${wantGold.length}`);
      if (bad) problems.push(`${agg.table}: ${bad} rows differ, e.g. ${ex}`);
    }
  }
  return problems;
}

/** `event_time` as epoch milliseconds, as the oracle's events hold it (JSON would give text in the session's zone). */
const EXACT_TIME = 'epoch_ms(event_time) AS event_time';

function normal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return v;
  return JSON.stringify(v);
}

export type { MergeConfig };

/**
 * True when silver's fold progress (`fold:` txns) and every gold table's (`gold:` txns) have
 * reached bronze's offsets (`bronze:` txns) on every partition.
 */
export async function caughtUp(env: TestEnv, contract: AnyContract): Promise<boolean> {
  const bronze = await env.table(contract.tables.bronze);
  if (!bronze) return false;
  const pairs = [...(await bronze.snapshot()).txnVersions()].filter(([appId]) => appId.startsWith('bronze:'));
  if (pairs.length === 0) return false;
  const targets: [string, string][] = [[contract.tables.silver, 'fold:'], ...contract.aggregates.map((a): [string, string] => [a.table, 'gold:'])];
  for (const [name, prefix] of targets) {
    const table = await env.table(name);
    if (!table) return false;
    const done = (await table.snapshot()).txnVersions();
    if (!pairs.every(([appId, v]) => done.get(appId.replace(/^bronze:/, prefix)) === v)) return false;
  }
  return true;
}
