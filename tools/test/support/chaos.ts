import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { abortAllRuns, runChaos, type ChaosOptions, type ChaosResult } from '../../src/chaos/run';

/** What a chaos CI test chooses; the work directory, its keeping and the progress log are {@link chaosRun}'s. */
export type ChaosRunOptions = Omit<ChaosOptions, 'workDir' | 'keep' | 'log'>;

/**
 * Runs a chaos scenario once for the test file (in `beforeAll`) in a fresh work directory under
 * SLUICE_TEST_DIR, and returns a getter for its result. The directory (lake, logs, broker data)
 * stays until the file's tests have run, so a test may read the tables again, and is removed
 * then unless CHAOS_KEEP is set; CHAOS_VERBOSE prints the run's progress.
 */
export function chaosRun(label: string, options: () => ChaosRunOptions | Promise<ChaosRunOptions>, timeoutMs: number): () => ChaosResult {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `${label}-`));
  let result: ChaosResult | undefined;
  beforeAll(async () => {
    result = await runChaos({ ...(await options()), workDir, keep: true, log: (l) => process.env.CHAOS_VERBOSE && process.stderr.write(`${l}\n`) });
  }, timeoutMs);
  afterAll(async () => {
    // A run cut short by the beforeAll timeout is still going: stop its services, private broker
    // and mount before its directory goes (a finished run has already stopped them).
    await abortAllRuns();
    if (!process.env.CHAOS_KEEP) rmSync(workDir, { recursive: true, force: true });
  }, 120_000);
  return () => {
    if (result === undefined) throw new Error(`chaos run ${label} did not finish`);
    return result;
  };
}
