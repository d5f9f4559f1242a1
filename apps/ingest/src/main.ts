import { describeConfig, warnIgnoredSettings } from '@sluice/config';
import { createTelemetry, exitWhenNotLive, hardExit, startOpsServer, telemetryOptionsFromConfig } from '@sluice/telemetry';
import { INGEST_CONFIG_PREFIXES, ingestConfigSchema, loadIngestConfig } from './config';
import { createIngest } from './runtime';

// The only module that touches process: config from env, wiring, signals.
async function main(): Promise<void> {
  const config = loadIngestConfig(process.env);
  const telemetry = createTelemetry({ service: 'ingest', ...telemetryOptionsFromConfig(config) });
  const log = telemetry.logger;
  log.info({ config: describeConfig(ingestConfigSchema, config) }, 'ingest starting');
  warnIgnoredSettings(log, 'ingest', ingestConfigSchema, process.env, INGEST_CONFIG_PREFIXES);

  const ingest = await createIngest(config, log, telemetry);
  const address = await ingest.app.listen({ host: config.host, port: config.port });
  // /metrics on its own port, never on the API port that producers reach through the load
  // balancer; the probes answer on both, the same way (also while the app drains).
  const ops = await startOpsServer({ host: config.opsHost, port: config.opsPort, metricsText: () => telemetry.metricsText(), live: () => ingest.isLive(), ready: () => ingest.ready() });
  log.info({ address, opsPort: ops.port }, 'ingest listening');

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'ingest draining');
    // Not unref'd: a drain waiting on a promise no handle keeps alive would let Node exit 0 quietly.
    setTimeout(() => {
      // Something did not return (a hung producer call would also hold up process.exit()).
      log.error('shutdown timed out');
      hardExit(telemetry);
    }, config.shutdownTimeoutMs + 5000);
    ingest
      .close()
      .then(() => ops.close())
      .then(() => telemetry.shutdown())
      .then(() => process.exit(0))
      .catch((err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // A wedged producer never delivers again and cannot be flushed: exit at once (nothing
  // unacknowledged is lost; producers retry what got no answer) for a fresh one.
  exitWhenNotLive(telemetry, () => stopping || ingest.isLive(), 'ingest producer wedged: deliveries keep failing while the broker answers; exiting', () => ({ wedgeAfterMs: config.wedgeAfterMs }));
}

main().catch((err) => {
  // Config errors list every problem; print them plainly, then fail.
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
