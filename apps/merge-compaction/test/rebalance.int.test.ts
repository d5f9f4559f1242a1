import { CONTRACTS, type AnyContract } from '@sluice/contracts';
import { KafkaAdmin } from '@sluice/kafka';
import { createLogger } from '@sluice/telemetry';
import type { MergeApp } from '../src/app';
import { generateStream } from '../src/oracle/oracle';
import { brokers, diffAgainstOracle, ORACLE_SPECS, produce, startApp, streamOptions, TEST_PARTITIONS, TestEnv, waitFor } from './support/harness';

/** One partition handed to a worker: where its hook said to resume, and when it logged that. */
interface Assignment {
  readonly worker: string;
  /** The bronze `txn` appId of the partition. */
  readonly appId: string;
  readonly offset: number;
  readonly atMs: number;
}

/** One bronze commit's `txn` versions by appId, and when its log file was written. */
interface TxnCommit {
  readonly modifiedMs: number;
  readonly versions: ReadonlyMap<string, number>;
}

/**
 * Two tier-1 workers in one consumer group, partitions moving between them while the stream
 * runs (a second member joins, the first leaves, a third joins); tier 2 and compaction run as a
 * separate deployment (roles). The oracle still holds, and every partition a worker was handed
 * resumed exactly after the last offset bronze had committed for it: tier 1 never commits
 * offsets to the group, so the table is the only place they can come from.
 */
describe('merge-compaction rebalance', () => {
  const env = new TestEnv('rebalance', [CONTRACTS.orders, CONTRACTS.inventory]);
  const sends = generateStream([ORACLE_SPECS.orders, ORACLE_SPECS.inventory], streamOptions(37, 800));
  const apps: MergeApp[] = [];
  const assignments: Assignment[] = [];
  /** Assignment log lines the test could not read (a throw in the logger would fail the hook instead). */
  const unreadable: string[] = [];
  let admin: KafkaAdmin | undefined;

  beforeAll(async () => {
    admin = new KafkaAdmin({ brokers: brokers(), clientId: 'rebalance-test' });
    await env.createTopics();
  });

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await admin?.close();
    await env.close();
  });

  const start = (roles: string, worker: string) => startApp(env, apps, { SLUICE_ROLES: roles, SLUICE_BATCH_MAX_MS: '250' }, assignmentLogger(worker, assignments, unreadable));

  it('hands partitions over at the offsets bronze committed while the stream runs, and keeps the oracle', async () => {
    const merger = await start('tier2,compaction', 'merger');
    expect(merger.tier1).toBeUndefined();
    const a = await start('tier1', 'A');
    expect(a.tier2).toBeUndefined();

    // Each quarter of the stream is produced after the previous one, paced, so every change of
    // membership below happens while records are still arriving. A member gets partitions only
    // once the group has (re)balanced, which can outlast a quarter's ~2 s of production on a busy
    // machine: each quarter after a join waits for the joining member's assignment, so it always
    // has records left to write (B once found none and the wait for it ran out).
    const quarter = Math.ceil(sends.length / 4);
    let producing = Promise.resolve();
    const produceQuarter = (i: number) => {
      producing = producing.then(() => produce(env, sends.slice(i * quarter, (i + 1) * quarter), { chunk: 50, pauseMs: 150 }));
    };
    const handedTo = (worker: string) => () => assignments.some((x) => x.worker === worker);
    await waitFor('worker A to be handed partitions', handedTo('A'), 60_000);
    produceQuarter(0);
    await waitFor('worker A to write', () => (a.tier1?.stats.commits ?? 0) > 2, 60_000);
    const b = await start('tier1', 'B');
    await waitFor('worker B to be handed partitions', handedTo('B'), 60_000);
    produceQuarter(1);
    await waitFor('worker B to write', () => (b.tier1?.stats.commits ?? 0) > 0, 60_000);
    produceQuarter(2);
    const aLeftAt = Date.now();
    await a.stop();
    const bWrittenWhenAStopped = b.tier1!.stats.written;
    const c = await start('tier1', 'C');
    await waitFor('worker C to be handed partitions', handedTo('C'), 60_000);
    produceQuarter(3);
    await producing;

    let problems: string[] = [];
    await waitFor('tables to equal the oracle', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 180_000, 1000).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    expect(a.tier1!.stats.written).toBeGreaterThan(0);
    expect(b.tier1!.stats.written - bWrittenWhenAStopped + c.tier1!.stats.written).toBeGreaterThan(0);

    // The group's offsets are advice, committed after each bronze commit: once drained they
    // equal bronze's (the resumed positions below are checked against the table's commits).
    const partitions = env.contracts.flatMap((contract) => Array.from({ length: TEST_PARTITIONS }, (_, partition) => ({ topic: env.topic(contract), partition })));
    const bronzeNext = new Map<string, number>();
    for (const contract of env.contracts) {
      const txns = (await (await env.table(contract.tables.bronze))!.snapshot()).txnVersions();
      for (let p = 0; p < TEST_PARTITIONS; p++) bronzeNext.set(`${env.topic(contract)}:${p}`, Number(txns.get(`bronze:${env.topic(contract)}-${p}`)) + 1);
    }
    let advice = new Map<string, number>();
    await waitFor('the group offsets at bronze', async () => {
      advice = await admin!.fetchCommittedOffsets(env.group, partitions);
      return JSON.stringify([...advice].sort()) === JSON.stringify([...bronzeNext].sort());
    }, 15_000, 200).catch((err) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify({ advice: [...advice], bronze: [...bronzeNext] })}`);
    });

    // Each assignment resumed right after the last version bronze had committed for the
    // partition before it (the previous owner's last write ends before its partitions are
    // handed on), or at 0 when none had been.
    const commits = (await Promise.all(env.contracts.map((contract) => bronzeTxnCommits(env, contract)))).flat();
    const resumed = assignments.map((x) => ({ ...x, expected: 1 + Math.max(-1, ...commits.filter((k) => k.modifiedMs < x.atMs).map((k) => k.versions.get(x.appId) ?? -1)) }));
    expect(unreadable).toEqual([]);
    expect(resumed.filter((x) => x.offset !== x.expected)).toEqual([]);
    expect(new Set(assignments.map((x) => x.appId)).size).toBe(partitions.length);

    // Partitions really moved, mid-stream (past offset 0): from A to B when B joined, from A
    // when A left; C was handed some; in the end every partition is B's or C's.
    const moves = handovers(assignments);
    expect(moves.some((m) => m.from === 'A' && m.to.worker === 'B' && m.to.atMs < aLeftAt && m.to.offset > 0)).toBe(true);
    expect(moves.some((m) => m.from === 'A' && m.to.atMs >= aLeftAt && m.to.offset > 0)).toBe(true);
    expect(assignments.some((x) => x.worker === 'C' && x.offset > 0)).toBe(true);
    const lastOwner = new Map([...assignments].sort((p, q) => p.atMs - q.atMs).map((x) => [x.appId, x.worker]));
    expect([...lastOwner.values()].filter((w) => w !== 'B' && w !== 'C')).toEqual([]);
  }, 540_000); // above five 60 s waits and the final 180 s one
});

/**
 * A worker's logger that records what its tier-1 assignment hook logged ("partitions assigned,
 * resuming from bronze offsets", each partition as `<topic>-<partition>@<offset>`); lines it
 * cannot read go to `unreadable`. With SLUICE_TEST_LOG_LEVEL set, every line is printed too.
 */
function assignmentLogger(worker: string, into: Assignment[], unreadable: string[]) {
  const echo = process.env.SLUICE_TEST_LOG_LEVEL !== undefined && process.env.SLUICE_TEST_LOG_LEVEL !== 'silent';
  return createLogger({
    service: 'merge-compaction',
    level: 'info',
    base: { worker },
    destination: {
      write(line: string) {
        if (echo) process.stdout.write(line);
        const entry = JSON.parse(line) as { msg?: string; time: string; partitions?: string[] };
        if (entry.msg !== 'partitions assigned, resuming from bronze offsets') return;
        for (const p of entry.partitions ?? []) {
          const match = /^(.+)@(\d+)$/.exec(p);
          if (match) into.push({ worker, appId: `bronze:${match[1]}`, offset: Number(match[2]), atMs: Date.parse(entry.time) });
          else unreadable.push(p);
        }
      },
    },
  });
}

/** Bronze's JSON commits with their `txn` versions, read from the log files directly. */
async function bronzeTxnCommits(env: TestEnv, contract: AnyContract): Promise<TxnCommit[]> {
  const storage = env.storage(contract.tables.bronze);
  const files = (await storage.list('_delta_log/')).filter((o) => /\/\d{20}\.json$/.test(o.key));
  return Promise.all(
    files.map(async (file) => {
      const versions = new Map<string, number>();
      for (const line of Buffer.from(await storage.get(file.key)).toString('utf8').split('\n')) {
        const action = line.trim() === '' ? {} : (JSON.parse(line) as { txn?: { appId: string; version: number } });
        if (action.txn) versions.set(action.txn.appId, action.txn.version);
      }
      return { modifiedMs: file.modifiedMs, versions };
    }),
  );
}

/** Per partition, every assignment to another worker than the one before it, in time order. */
function handovers(assignments: readonly Assignment[]): { from: string; to: Assignment }[] {
  const previous = new Map<string, string>();
  const out: { from: string; to: Assignment }[] = [];
  for (const x of [...assignments].sort((p, q) => p.atMs - q.atMs)) {
    const from = previous.get(x.appId);
    if (from !== undefined && from !== x.worker) out.push({ from, to: x });
    previous.set(x.appId, x.worker);
  }
  return out;
}
