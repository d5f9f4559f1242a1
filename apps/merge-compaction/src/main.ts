import { describeConfig, loadConfig } from '@sluice/config';
import { createTelemetry, telemetryOptionsFromConfig } from '@sluice/telemetry';
import { build } from './app';
import { mergeConfigSchema } from './config';

// The only module that touches process: config from env, wiring, signals.
async function main(): Promise<void> {
  const config = loadConfig(mergeConfigSchema, process.env);
  const telemetry = createTelemetry({ service: 'merge-compaction', ...telemetryOptionsFromConfig(config) });
  const log = telemetry.logger;
  log.info({ config: { ...describeConfig(mergeConfigSchema, config), roles: [...config.roles] } }, 'merge-compaction starting');

  const app = await build({ config, logger: log, metrics: telemetry.metrics, metricsText: () => telemetry.metricsText(), tracer: telemetry });
  await app.start();

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) {
      // A second signal: leave at once. Safe: a commit is atomic, unreferenced files are vacuumed.
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'merge-compaction draining');
    const timer = setTimeout(() => {
      log.error('shutdown timed out; exiting (nothing partial is committed)');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
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
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
