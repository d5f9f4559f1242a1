import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { freePort } from '@sluice/testing';
import { generateStream } from '../src/oracle/oracle';
import { Rng } from '../src/oracle/random';
import { mergeConfigSchema } from '../src/config';
import { ChildService, status } from './support/child';
import { diffAgainstOracle, ORACLE_SPECS, produce, streamOptions, TestEnv, waitFor } from './support/harness';

// SIGKILL a real merge-compaction process at random points while the stream runs — mid-batch,
// between a data file write and its commit, during compaction or a fold — several times; after
// recovery the oracle still holds (nothing lost, nothing doubled, silver/gold exact). Twice:
// with every step folding bronze into silver's files (fold percent 0), and with the default
// amortised fold, where steps mostly append to silver's tail and fold a bucket only once its
// pending rows pass a share of it.
/** How long the stream flows, ms: about four cold starts of the service. */
const STREAM_MS = 24_000;

describe.each([
  ['every step folds', '0', 23, 99],
  ['default amortised fold', String(mergeConfigSchema.silverFoldPercent.default), 29, 101],
])('merge-compaction crash recovery (%s)', (_label, foldPercent, streamSeed, killSeed) => {
  const env = new TestEnv(`crash-${foldPercent}`, [CONTRACTS.orders, CONTRACTS.clickstream]);
  const sends = generateStream([ORACLE_SPECS.orders, ORACLE_SPECS.clickstream], streamOptions(streamSeed, 900));
  const children: ChildService[] = [];
  const logFile = path.join(env.lakeRoot, 'service.log');
  const scratchRoot = `${env.lakeRoot}-scratch`;

  beforeAll(() => env.createTopics());

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await env.close();
    await fs.rm(scratchRoot, { recursive: true, force: true });
  });

  it('survives repeated SIGKILLs with the oracle intact', async () => {
    const rng = new Rng(killSeed);
    // The same port across every restart, below the ephemeral range (see freePort).
    const port = await freePort();
    const childEnv = env.env({
      OPS_PORT: String(port),
      LOG_LEVEL: 'info',
      SLUICE_BATCH_MAX_MS: '200',
      SLUICE_MERGE_INTERVAL_MS: '200',
      SLUICE_COMPACTION_INTERVAL_MS: '400',
      SLUICE_COMPACTION_MIN_FILES: '2',
      SLUICE_SILVER_FOLD_PERCENT: foldPercent,
      SLUICE_SCRATCH_DIR: scratchRoot,
    });
    const start = () => {
      const c = new ChildService(childEnv, logFile);
      children.push(c);
      return c;
    };
    // The stream keeps flowing while the service dies and comes back: it is spread over about
    // as long as four cold starts take, so the kills land on a process with new events coming
    // in, not on one that caught up before the first kill.
    const txnSize = 60;
    const producing = produce(env, sends, { transactional: true, txnSize, pauseMs: Math.round(STREAM_MS / Math.ceil(sends.length / txnSize)) });
    let streaming = true;
    void producing.finally(() => (streaming = false));
    const kills = 4;
    let midStreamKills = 0;
    for (let i = 0; i < kills; i++) {
      const child = start();
      await waitFor('child ready', async () => (await status(`http://127.0.0.1:${port}/readyz`)) === 200, 60_000);
      await new Promise((r) => setTimeout(r, 400 + rng.int(2200)));
      if (streaming) midStreamKills++;
      child.kill('SIGKILL');
      const exit = await child.exited;
      expect(exit.signal).toBe('SIGKILL');
    }
    await producing;
    expect(midStreamKills).toBeGreaterThanOrEqual(2);
    const last = start();
    let problems: string[] = [];
    await waitFor('tables to equal the oracle after recovery', async () => (problems = await diffAgainstOracle(env, sends)).length === 0, 100_000, 1500).catch((err) => {
      throw new Error(`${(err as Error).message}\n${problems.join('\n')}`);
    });
    // A graceful stop exits 0. The oracle may already hold before this child has set up its
    // signal handlers (the killed ones did the work): a SIGTERM then ended it by default, with
    // no exit code, and the test failed for a reason of its own.
    await waitFor('the last child ready', async () => (await status(`http://127.0.0.1:${port}/readyz`)) === 200, 60_000);
    // The killed processes' scratch files (staged rows, Parquet outputs, DuckDB spill) were
    // removed by the process after each: only the running one's directory is left.
    expect((await fs.readdir(scratchRoot)).filter((name) => name.startsWith('sluice-run-'))).toEqual([expect.stringMatching(/^sluice-run-\d+-\d+$/)]);
    expect(await fs.readFile(logFile, 'utf8')).toContain('removed the scratch files of processes that were killed');
    last.kill('SIGTERM');
    expect((await last.exited).code).toBe(0);
  }, 360_000); // above five cold starts (60 s each at most) and the 100 s final wait
});
