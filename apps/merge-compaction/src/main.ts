import { readFileSync } from 'node:fs';
import { describeConfig, parseCgroupMemoryLimit, warnIgnoredSettings } from '@sluice/config';
import { createTelemetry, exitWhenNotLive, hardExit, telemetryOptionsFromConfig } from '@sluice/telemetry';
import { build } from './app';
import { duckdbMemoryMbFor, loadMergeConfig, MERGE_CONFIG_PREFIXES, mergeConfigSchema } from './config';

/** The container's memory limit: cgroup v2, else v1; undefined outside a limited cgroup. */
function containerMemoryBytes(): number | undefined {
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      return parseCgroupMemoryLimit(readFileSync(file, 'utf8'));
    } catch {
      // not this cgroup version
    }
  }
  return undefined;
}

// The only module that touches process: config from env, wiring, signals.
async function main(): Promise<void> {
  const config = loadMergeConfig(process.env);
  const telemetry = createTelemetry({ service: 'merge-compaction', ...telemetryOptionsFromConfig(config) });
  const log = telemetry.logger;
  const containerBytes = containerMemoryBytes();
  log.info(
    { config: { ...describeConfig(mergeConfigSchema, config), roles: [...config.roles] }, containerMemoryBytes: containerBytes ?? null, duckdbMemoryMb: duckdbMemoryMbFor(config.duckdbMemoryMb, containerBytes) ?? 'duckdb default' },
    'merge-compaction starting',
  );
  warnIgnoredSettings(log, 'merge-compaction', mergeConfigSchema, process.env, MERGE_CONFIG_PREFIXES);

  const app = await build({ config, logger: log, metrics: telemetry.metrics, metricsText: () => telemetry.metricsText(), tracer: telemetry, containerMemoryBytes: containerBytes });
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      // A second signal: leave at once. Safe: a commit is atomic, unreferenced files are vacuumed.
      hardExit(telemetry);
      return;
    }
    stopping = true;
    log.info({ signal }, 'merge-compaction draining');
    // Not unref'd: a drain waiting on a promise no handle keeps alive would let Node exit 0 quietly.
    setTimeout(() => {
      // Something did not return (a hung client call would also hold up process.exit()).
      log.error('shutdown timed out; exiting (nothing partial is committed)');
      hardExit(telemetry);
    }, config.shutdownTimeoutMs);
    app
      .stop()
      .then(() => telemetry.shutdown())
      .then(() => process.exit(0))
      .catch((err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // After the handlers: tier 1 waits at start until its storage answers, and a signal meanwhile
  // must drain like any other, not end the process by default.
  await app.start();
  // Not live: tier 1's loop died, a poll hung in the Kafka client or a rebalance hook, or the group
  // left partitions without an owner while this worker held none (a wedged join). A hung
  // call cannot be closed (nor can process.exit() join its thread), so report it and end at once;
  // the next start resumes from bronze's offsets.
  exitWhenNotLive(
    telemetry,
    () => stopping || app.live(),
    'merge-compaction is not live (tier 1 stopped or hung, its group left partitions without an owner, or a tier-2 or compaction pass hung); exiting',
    () => ({
      running: app.tier1?.running(),
      stallTimeoutMs: config.stallTimeoutMs,
      assignment: app.tier1?.assignment(),
      tier2PassRunningMs: app.tier2?.passRunningMs,
      compactionSinceProgressMs: app.compaction?.sinceProgressMs,
      jobStallTimeoutMs: config.jobStallTimeoutMs,
    }),
  );
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
