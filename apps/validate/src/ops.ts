import { startOpsServer, type OpsServer } from '@sluice/telemetry';
import type { ValidateConfig } from './config';

/**
 * Starts validate's ops server (GET /metrics, /healthz: not hung, /readyz: connected) on OPS_HOST:OPS_PORT. The host
 * matters: containers set 0.0.0.0, and a server on the 127.0.0.1 default fails every probe.
 */
export function startValidateOps(
  config: Pick<ValidateConfig, 'opsHost' | 'opsPort'>,
  metricsText: () => Promise<string>,
  ready: () => boolean,
  live: () => boolean,
): Promise<OpsServer> {
  return startOpsServer({ host: config.opsHost, port: config.opsPort, metricsText, ready, live });
}
