import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';

/** A fresh directory for one test's tables under SLUICE_TEST_DIR or the OS temp dir. */
export async function tempDir(label = 'lake'): Promise<string> {
  const base = process.env.SLUICE_TEST_DIR ?? os.tmpdir();
  const dir = path.join(base, `${label}-${randomUUID()}`);
  await fs.mkdir(dir, { recursive: true });
  return dir;
}

/** The small table most log tests use: a key, a version and a bucket partition column. */
export const KEY_V_BUCKET: { name: string; type: 'long' | 'integer' }[] = [
  { name: 'key', type: 'long' },
  { name: 'v', type: 'long' },
  { name: 'bucket', type: 'integer' },
];

/** Rows of {@link KEY_V_BUCKET} for keys [from, to), all at version `v`, bucket = key % 2. */
export const keyRows = (from: number, to: number, v = 1) => Array.from({ length: to - from }, (_, i) => ({ key: from + i, v, bucket: (from + i) % 2 }));

/** The path of commit `v` of the table at `root`. */
export const commitFile = (root: string, v: number) => path.join(root, '_delta_log', `${String(v).padStart(20, '0')}.json`);

/** The venv python with `deltalake` installed by tools/setup/steps.d/10-python.sh. */
export const VENV_PYTHON = path.join(os.homedir(), '.cache/sluice/venv/bin/python');

/** Runs test/delta_probe.py (the independent delta-rs reader) and returns its JSON answer. */
/** One row as delta_probe.py prints it (JSON values). */
export type ProbeRow = Record<string, unknown>;

/** The JSON answer of delta_probe.py; shape depends on the command. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- free-form JSON from Python, checked by each test's expectations
export type ProbeAnswer = any;

export async function deltaProbe(command: string, table: string, ...args: string[]): Promise<ProbeAnswer> {
  try {
    await fs.access(VENV_PYTHON);
  } catch {
    throw new Error(`${VENV_PYTHON} is missing: run tools/setup/steps.d/10-python.sh (installs deltalake)`);
  }
  const script = path.join(__dirname, 'delta_probe.py');
  const out = await new Promise<string>((resolve, reject) => {
    execFile(VENV_PYTHON, [script, command, table, ...args], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`delta_probe ${command} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
  return JSON.parse(out);
}
