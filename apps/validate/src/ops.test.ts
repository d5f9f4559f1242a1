import { startValidateOps } from './ops';

describe('startValidateOps', () => {
  // Bug: main.ts called startOpsServer without host, so OPS_HOST was ignored and the server
  // listened on 127.0.0.1 only (Kubernetes and compose probes failed). 127.0.0.2 is another
  // loopback address: reachable only when the configured host is honoured.
  it('binds OPS_HOST, not the 127.0.0.1 default (probes failed in containers)', async () => {
    let ready = false;
    let live = true;
    const ops = await startValidateOps({ opsHost: '127.0.0.2', opsPort: 0 }, async () => 'sluice_validate_up 1\n', () => ready, () => live);
    try {
      const base = `http://127.0.0.2:${ops.port}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      ready = true;
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      live = false; // a hung batch: liveness fails, readiness is unchanged
      expect((await fetch(`${base}/healthz`)).status).toBe(503);
      expect(await (await fetch(`${base}/metrics`)).text()).toBe('sluice_validate_up 1\n');
    } finally {
      await ops.close();
    }
  });

  it('refuses an address it cannot bind instead of falling back to another one', async () => {
    await expect(startValidateOps({ opsHost: '192.0.2.1', opsPort: 0 }, async () => '', () => true, () => true)).rejects.toThrow(/EADDRNOTAVAIL/);
  });
});
