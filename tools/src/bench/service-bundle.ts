import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

/** Repository root (tools/src/bench → ../../..). */
export const ROOT = path.resolve(__dirname, '../../..');

/** The four services of the pipeline. */
export type ServiceName = 'ingest' | 'validate' | 'merge-compaction' | 'query-api';

/**
 * Bundles a service with deploy/bundle.sh, the script its image is built with, into `outDir`
 * (default `.sluice/bench/bin/<service>`); returns the path of its main.js. Benchmarks and chaos
 * runs measure what ships, not the TypeScript loader (tsx adds a loader thread, per-import
 * getters and transpile memory).
 */
export function bundleService(service: ServiceName, outDir = path.join(ROOT, '.sluice', 'bench', 'bin', service)): Promise<string> {
  return runBundle([service, outDir], outDir);
}

/** Bundles any entry point (a benchmark's workload) with the same esbuild settings as the services. */
export function bundleEntry(entry: string, outDir: string): Promise<string> {
  return runBundle(['--entry', entry, outDir], outDir);
}

async function runBundle(args: readonly string[], outDir: string): Promise<string> {
  await promisify(execFile)('bash', [path.join(ROOT, 'deploy', 'bundle.sh'), ...args], { cwd: ROOT });
  return path.join(outDir, 'main.js');
}

/**
 * Starts a bundled service as the image does (`node --enable-source-maps main.js`), one process
 * so /proc shows the service itself. The bundle may sit outside the workspace (a work
 * directory): its npm packages resolve from the workspace's node_modules (NODE_PATH). Unlike the
 * image, that is every package, not the service's pruned set, and NODE_ENV is not forced to
 * production: a package the image prunes but the bundle needs would pass here.
 */
export function spawnService(main: string, env: Record<string, string | undefined>, options: Omit<SpawnOptions, 'env'> = {}): ChildProcess {
  return spawn(process.execPath, ['--enable-source-maps', main], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options,
    env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules'), ...env },
  });
}
