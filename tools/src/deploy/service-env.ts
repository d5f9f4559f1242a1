import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceId } from '@sluice/telemetry';
import { REPO_ROOT } from './k8s-render';

/** Config modules whose environment names a service reads (its own schema plus the shared Kafka security and telemetry fields). */
const CONFIG_SOURCES: Record<ServiceId, string[]> = {
  ingest: ['apps/ingest/src/config.ts', 'libs/kafka/src/security.ts', 'libs/telemetry/src/config.ts'],
  validate: ['apps/validate/src/config.ts', 'libs/kafka/src/security.ts', 'libs/telemetry/src/config.ts'],
  'merge-compaction': ['apps/merge-compaction/src/config.ts', 'libs/kafka/src/security.ts', 'libs/telemetry/src/config.ts'],
  'query-api': ['apps/query-api/src/config.ts', 'libs/telemetry/src/config.ts'],
};

/** Variables that tune the process, not the service: V8's heap sizes, glibc's malloc arenas (benchmarks take the manifests' values). */
export const PROCESS_TUNING_ENV: readonly string[] = ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'];

/** Variables for the runtime, not the app: the process tuning above; HOME for DuckDB's home directory. */
const RUNTIME_ENV = new Set([...PROCESS_TUNING_ENV, 'HOME', 'NODE_ENV']);

/**
 * Names deploy/ sets that the service does not read yet — the lead reconciles them with the
 * service owners (docs/operations.md, "Environment"). Keep this list short and explained.
 */
export const PENDING_ENV: Record<ServiceId, readonly string[]> = {
  ingest: [],
  validate: [],
  'merge-compaction': [],
  'query-api': [],
};

/** Variables each service needs and has no default for: deploy/ must set them. */
export const REQUIRED_ENV: Record<ServiceId, readonly string[]> = {
  ingest: ['KAFKA_BROKERS', 'INGEST_API_KEYS'],
  validate: ['KAFKA_BROKERS', 'VALIDATE_INSTANCE_ID'],
  // The lake root has a default (.sluice/lake, for a local run) that in the image is under the read-only /app.
  'merge-compaction': ['SLUICE_KAFKA_BROKERS', 'SLUICE_LAKE_ROOT'],
  'query-api': ['QUERY_API_LAKE_ROOT', 'QUERY_API_TABLES', 'QUERY_API_TOKENS'],
};

/** Environment names appearing as string literals in the service's config modules. */
export function envNamesRead(service: ServiceId): Set<string> {
  const names = new Set<string>();
  for (const file of CONFIG_SOURCES[service]) {
    const text = readFileSync(join(REPO_ROOT, file), 'utf8');
    // A field helper call: name(<T>)?('ENV_NAME', …).
    for (const m of text.matchAll(/\b[a-zA-Z]+(?:<[^>()]*>)?\(\s*'([A-Z][A-Z0-9_]+)'/g)) names.add(m[1]);
  }
  return names;
}

/**
 * Problems with the variables a deployment gives `service`: names the service does not read
 * (typos, stale names) unless pending, and required names that are missing.
 */
export function envProblems(service: ServiceId, given: Iterable<string>): string[] {
  const read = envNamesRead(service);
  const givenSet = new Set(given);
  const problems: string[] = [];
  for (const n of givenSet) {
    if (!read.has(n) && !RUNTIME_ENV.has(n) && !PENDING_ENV[service].includes(n)) problems.push(`${service}: ${n} is not read by the service`);
  }
  for (const n of REQUIRED_ENV[service]) if (!givenSet.has(n)) problems.push(`${service}: required ${n} is not set`);
  return problems;
}
