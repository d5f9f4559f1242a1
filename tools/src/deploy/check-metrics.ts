import { join } from 'node:path';
import { SERVICES, type ServiceId } from '@sluice/telemetry';
import { checkRunningServices } from './metric-refs';

/**
 * CLI: checks running services' /metrics against the telemetry catalog and lists alert/panel
 * metrics they have not exposed yet.
 *   npx tsx tools/src/deploy/check-metrics.ts ingest=http://127.0.0.1:9466/metrics validate=http://127.0.0.1:9464/metrics
 * (each service's ops port, OPS_PORT; run-local.sh's are printed at its start)
 * Exit 1 on a catalog problem; metrics not yet exposed are reported but do not fail.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const urls: Partial<Record<ServiceId, string>> = {};
  for (const arg of argv) {
    const [service, url] = arg.split(/=(.*)/s, 2);
    if (!(SERVICES as readonly string[]).includes(service) || !url) {
      process.stderr.write(`usage: check-metrics.ts <${SERVICES.join('|')}>=<metrics url> ...; got "${arg}"\n`);
      return 2;
    }
    urls[service as ServiceId] = url;
  }
  if (Object.keys(urls).length === 0) {
    process.stderr.write('usage: check-metrics.ts <service>=<metrics url> ...\n');
    return 2;
  }
  const { problems, missing } = await checkRunningServices(join(__dirname, '../../../deploy'), urls);
  for (const p of problems) process.stdout.write(`problem: ${p}\n`);
  for (const m of missing) process.stdout.write(`not exposed yet: ${m}\n`);
  process.stdout.write(`${problems.length} problems, ${missing.length} alert/panel metrics not exposed yet\n`);
  return problems.length === 0 ? 0 : 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
    },
  );
}
