import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { PROCESS_TUNING_ENV } from '../deploy/service-env';

/** Repository root (tools/src/bench → ../../..). */
export const ROOT = path.resolve(__dirname, '../../..');

/** One setting of deploy/k8s/base/config/common.env, the environment every deployed service gets. */
function deployedSetting(key: string): string {
  const file = path.join(ROOT, 'deploy/k8s/base/config/common.env');
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`${key}=`));
  if (line === undefined) throw new Error(`${key} is not set in ${file}`);
  return line.slice(key.length + 1).trim();
}

/**
 * Settings every service gets as deployed where the code's default differs: the share of new
 * traces sampled (1 % there, every trace by default). At every trace, each event carries a
 * sampled `traceparent` that validate and merge-compaction turn into spans and merge-compaction
 * holds per buffered record (docs/bench/e2e.md). Benchmarks start services with these unless
 * told otherwise, so they measure what runs in production.
 */
export const DEPLOYED_ENV: Readonly<Record<string, string>> = Object.freeze({ TRACES_SAMPLE_RATIO: deployedSetting('TRACES_SAMPLE_RATIO') });

/** The manifest of each service's workload in deploy/k8s/base (tier 1's for merge-compaction). */
const WORKLOAD_MANIFESTS: Record<ServiceName, string> = {
  ingest: 'deploy/k8s/base/ingest/deployment.yaml',
  validate: 'deploy/k8s/base/validate/statefulset.yaml',
  'merge-compaction': 'deploy/k8s/base/merge-compaction/deployment.yaml',
  'query-api': 'deploy/k8s/base/query-api/deployment.yaml',
};

/**
 * {@link DEPLOYED_ENV} plus the runtime settings the service's manifest gives its container (see
 * {@link runtimeEnvOf}), so a benchmark's memory figures are those of the deployment.
 */
export function deployedEnvOf(service: ServiceName): Record<string, string> {
  return { ...DEPLOYED_ENV, ...runtimeEnvOf(WORKLOAD_MANIFESTS[service]) };
}

/** merge-compaction's folder deployment (tier 2 and compaction), as deployed beside tier 1. */
export const FOLDER_MANIFEST = 'deploy/k8s/base/merge-compaction/folder-deployment.yaml';

/** The process-tuning variables ({@link PROCESS_TUNING_ENV}) a workload manifest's container sets (empty when it sets none). */
export function runtimeEnvOf(manifestPath: string): Record<string, string> {
  const manifest = parse(readFileSync(path.join(ROOT, manifestPath), 'utf8')) as {
    spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } };
  };
  const env: Record<string, string> = {};
  for (const e of manifest.spec.template.spec.containers[0].env ?? []) {
    if (PROCESS_TUNING_ENV.includes(e.name) && e.value !== undefined) env[e.name] = e.value;
  }
  return env;
}

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
  // e.g. SLUICE_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile every service.
  const extra = (process.env.SLUICE_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  return spawn(process.execPath, ['--enable-source-maps', ...extra, main], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options,
    env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules'), ...env },
  });
}
