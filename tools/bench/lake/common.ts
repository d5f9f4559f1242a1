// Shared helpers of the libs/lake benchmarks (tools/bench/lake/*.ts, run with `npx tsx`).
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';

/** `--name value` command-line options with defaults. */
export function args<T extends Record<string, string | number | boolean>>(defaults: T): T {
  const out: Record<string, string | number | boolean> = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([\w-]+)$/.exec(argv[i]);
    if (!m || !(m[1] in defaults)) throw new Error(`unknown option ${argv[i]}; known: ${Object.keys(defaults).join(', ')}`);
    const d = defaults[m[1]];
    const raw = typeof d === 'boolean' ? 'true' : argv[++i];
    out[m[1]] = typeof d === 'number' ? Number(raw.replace(/_/g, '')) : typeof d === 'boolean' ? raw === 'true' : raw;
  }
  return out as T;
}

/** A scratch directory under BENCH_DIR or the OS temp dir, removed by `cleanup`. */
export async function benchDir(label: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = path.join(process.env.BENCH_DIR ?? os.tmpdir(), `bench-${label}-${randomUUID().slice(0, 8)}`);
  await fs.mkdir(dir, { recursive: true });
  return { dir, cleanup: () => fs.rm(dir, { recursive: true, force: true }) };
}

/** Milliseconds of an async call, wall and CPU (the whole process's, every thread: DuckDB's too). */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; cpuMs: number; value: T }> {
  const t = performance.now();
  const cpu = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(cpu);
  return { ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000, value };
}

/** Bytes in a directory tree. */
export async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? await dirBytes(p) : (await fs.stat(p)).size;
  }
  return total;
}

export const MB = 1024 * 1024;
