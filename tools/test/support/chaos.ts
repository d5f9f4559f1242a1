import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { abortAllRuns, runChaos, type ChaosOptions, type ChaosResult } from '../../src/chaos/run';

/** What a chaos CI test chooses; the work directory, its keeping and the progress log are {@link chaosRun}'s. */
export type ChaosRunOptions = Omit<ChaosOptions, 'workDir' | 'keep' | 'log'>;

/** Lines of the run's progress a failure quotes (the CI summary keeps 1500 characters of it). */
const QUOTED_LINES = 14;
const QUOTED_LINE_CHARS = 90;
/** Left of the hook's time when the run is declared over time, for the failure and the clean-up. */
const OVERTIME_MARGIN_MS = 20_000;

/**
 * Runs a chaos scenario once for the test file (in `beforeAll`) in a fresh work directory under
 * SLUICE_TEST_DIR, and returns a getter for its result. The directory (lake, logs, broker data)
 * stays until the file's tests have run, so a test may read the tables again, and is removed
 * then unless CHAOS_KEEP is set; CHAOS_VERBOSE prints the run's progress.
 *
 * A run that fails or is still going shortly before `timeoutMs` fails the tests with the last
 * lines of its progress, each stamped with the seconds since the run began, so a CI log says
 * which step hung (broker start, load, drain) rather than only that the hook timed out.
 */
export function chaosRun(label: string, options: () => ChaosRunOptions | Promise<ChaosRunOptions>, timeoutMs: number): () => ChaosResult {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? os.tmpdir(), `${label}-`));
  let result: ChaosResult | undefined;
  beforeAll(async () => {
    const progress = new ProgressLog();
    const run = runChaos({ ...(await options()), workDir, keep: true, log: (l) => progress.add(l) });
    let timer: NodeJS.Timeout | undefined;
    const overtime = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${Math.round(progress.seconds())} s`)), timeoutMs - OVERTIME_MARGIN_MS);
    });
    try {
      result = await Promise.race([run, overtime]);
    } catch (err) {
      // The whole progress goes to stderr; the failure quotes its end.
      process.stderr.write(`chaos run ${label}:\n${progress.lines().join('\n')}\n`);
      throw new Error(`chaos run ${label} failed: ${(err as Error).message}\nlast steps:\n${progress.tail(QUOTED_LINES, QUOTED_LINE_CHARS).join('\n')}`);
    } finally {
      clearTimeout(timer);
    }
  }, timeoutMs);
  afterAll(async () => {
    // A run cut short by the overtime is still going: stop its services, private broker and
    // mount before its directory goes (a finished run has already stopped them).
    await abortAllRuns();
    if (!process.env.CHAOS_KEEP) rmSync(workDir, { recursive: true, force: true });
  }, 120_000);
  return () => {
    if (result === undefined) throw new Error(`chaos run ${label} did not finish`);
    return result;
  };
}

/** A run's progress lines, each stamped with the seconds since the run began. */
class ProgressLog {
  private readonly started = Date.now();
  private readonly all: string[] = [];

  seconds(): number {
    return (Date.now() - this.started) / 1000;
  }

  add(line: string): void {
    const stamped = `${this.seconds().toFixed(1).padStart(6)}s ${line}`;
    this.all.push(stamped);
    if (process.env.CHAOS_VERBOSE) process.stderr.write(`${stamped}\n`);
  }

  lines(): readonly string[] {
    return this.all;
  }

  tail(count: number, maxChars: number): string[] {
    return this.all.slice(-count).map((l) => (l.length > maxChars ? `${l.slice(0, maxChars)}…` : l));
  }
}
