import { describeConfig, warnIgnoredSettings } from '@sluice/config';
import { createTelemetry, exitWhenNotLive, hardExit, telemetryOptionsFromConfig } from '@sluice/telemetry';
import { build } from './app';
import { loadValidateConfig, VALIDATE_CONFIG_PREFIXES, validateConfigSchema } from './config';
import { startValidateOps } from './ops';

// The only module that touches process: config from env, wiring, signals.
async function main(): Promise<void> {
  const config = loadValidateConfig(process.env);
  const telemetry = createTelemetry({ service: 'validate', instance: config.instanceId, ...telemetryOptionsFromConfig(config) });
  const log = telemetry.logger;
  log.info({ config: describeConfig(validateConfigSchema, config) }, 'validate starting');
  warnIgnoredSettings(log, 'validate', validateConfigSchema, process.env, VALIDATE_CONFIG_PREFIXES);

  const service = build({ config, logger: log, metrics: telemetry.metrics, tracer: telemetry });
  const ops = await startValidateOps(config, () => telemetry.metricsText(), service.ready, service.live);
  // A hung Kafka call never returns, so close() would hang too: report it and end at once; a
  // fresh instance fences the open transaction and resumes from the committed offsets. The same
  // for a consumer stuck without progress: a fresh one rejoins the group and fetches anew.
  exitWhenNotLive(telemetry, service.live, 'validate not live (a Kafka call did not return, or no progress through raw); exiting', () => ({
    running: service.running(),
    stallTimeoutMs: config.stallTimeoutMs,
    progress: service.progress(),
  }));

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, totals: service.totals() }, 'validate stopping');
    // A close that does not return means a hung client call, which would hold up process.exit() too.
    // Not unref'd: a drain waiting on a promise no handle keeps alive would let Node exit 0 quietly.
    setTimeout(() => {
      log.error('shutdown timed out');
      hardExit(telemetry);
    }, 30_000);
    service
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

  try {
    await service.run();
  } catch (err) {
    if (stopping) return;
    // A connect that failed (the broker unreachable at start, retryable) or an error the loop does
    // not retry (fenced, fatal): end and let the supervisor start a fresh instance.
    const retryable = (err as { retryable?: unknown } | null)?.retryable === true;
    log.fatal({ err, retryable }, retryable ? 'validate could not connect to Kafka; exiting for the supervisor to start it again' : 'validate stopped on a non-retryable error');
    // Bounded: after a hung transactional call (KAFKA_FATAL) the native client may never close,
    // and its blocked worker thread would keep process.exit() waiting too.
    await Promise.race([service.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 15_000))]);
    hardExit(telemetry);
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
