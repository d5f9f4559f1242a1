// Tier 1 on a secured cluster: its consumer, DLQ producer and group watch connect with the
// KAFKA_SECURITY_* / KAFKA_SASL_* / KAFKA_SSL_* settings (here mutual TLS), and events from the
// valid topic land in bronze.
import path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { testSecureListeners } from '@sluice/testing';
import type { MergeApp } from '../src/app';
import { orderSend, produce, readRows, startApp, TestEnv, waitFor } from './support/harness';

jest.setTimeout(120_000);

function mutualTls(): Record<string, string> {
  const { ssl, tlsDir } = testSecureListeners();
  const tls = (file: string) => path.join(tlsDir, file);
  return {
    SLUICE_KAFKA_BROKERS: ssl,
    KAFKA_SECURITY_PROTOCOL: 'ssl',
    KAFKA_SSL_CA_LOCATION: tls('ca.pem'),
    KAFKA_SSL_CERTIFICATE_LOCATION: tls('client-cert.pem'),
    KAFKA_SSL_KEY_LOCATION: tls('client-key.pem'),
  };
}

describe('tier 1 on mutual TLS', () => {
  const apps: MergeApp[] = [];
  let env: TestEnv | undefined;

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await env?.close();
  });

  it('appends the valid topic to bronze through the secured listener', async () => {
    env = new TestEnv('secure', [CONTRACTS.orders]);
    await env.createTopics(); // through the plaintext listener, as the provisioning job would
    await startApp(env, apps, { SLUICE_ROLES: 'tier1', ...mutualTls() });
    const sends = ['A', 'B', 'C'].map((id) => orderSend(Date.now(), id, 1, 'upsert', 0));
    await produce(env, sends);
    const bronze = async () => (await readRows(env as TestEnv, 'bronze_orders', 'SELECT event_id FROM t ORDER BY event_id').catch(() => [])).map((r) => r.event_id);
    await waitFor('three events in bronze', async () => (await bronze()).length === 3, 60_000, 300);
    expect(await bronze()).toEqual(['A-v1-upsert', 'B-v1-upsert', 'C-v1-upsert']);
  });
});
