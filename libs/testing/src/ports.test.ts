import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { ephemeralPortRange, freePort } from './ports';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

function close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()));
}

/** A `random` giving these values in turn, then the last one for ever. */
function sequence(...values: number[]): () => number {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)];
}

describe('freePort', () => {
  it('hands out ports outside the kernel\'s ephemeral range that a server can listen on', async () => {
    const { min, max } = ephemeralPortRange();
    const ports = [];
    for (let i = 0; i < 20; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20000);
      expect(port < min || port > max).toBe(true);
    }
    await close(await listen(ports[0]));
  });

  // The same choice twice: the port is not handed out again, whether it is free or not.
  it('never hands out a port twice, nor one inside another\'s run of following ports', async () => {
    // One span of choices, 20000–29999: 20000 + 0.5 × 10000 = 25000.
    const ephemeral = { min: 30000, max: 65535 };
    const first = await freePort({ random: () => 0.5, ephemeral });
    expect(first).toBe(25000);
    await expect(freePort({ random: () => 0.5, ephemeral })).rejects.toThrow(/after 100 tries/);
    // 24999 and its following 25000 overlap the first: the next choice (20000) is taken instead.
    expect(await freePort({ following: 1, random: sequence(4999 / 9999, 0), ephemeral })).toBe(20000);
  });

  it('skips a port something listens on', async () => {
    const ephemeral = { min: 30000, max: 65535 };
    // Held here, or already by something else on the machine: busy either way.
    const busy = await listen(21000).catch(() => undefined);
    try {
      expect(await freePort({ random: sequence(0.1, 0.2), ephemeral })).toBe(22000);
    } finally {
      if (busy) await close(busy);
    }
  });

  it('goes above a range that starts too low, and refuses when the range leaves no room', async () => {
    // A host with 1024–40000: nothing below it above 20000, so above it.
    const port = await freePort({ random: () => 0.25, ephemeral: { min: 1024, max: 40000 } });
    expect(port).toBe(40001 + Math.floor(0.25 * (65535 - 40001 + 1)));
    await expect(freePort({ ephemeral: { min: 1024, max: 65535 } })).rejects.toThrow(/no room for 1 port\(s\) outside the ephemeral range 1024-65535/);
    // The run of following ports must fit under the range's start too.
    expect(await freePort({ following: 3, random: () => 0.999999, ephemeral: { min: 20010, max: 65535 } })).toBe(20006);
  });

  // Why not listen(0): a connection's source port comes from the ephemeral range and holds the
  // port against a server for as long as the connection lives.
  it('a port an outgoing connection was given cannot be listened on, which is why freePort stays out of the range', async () => {
    const server = await listen(0);
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    try {
      const source = client.localPort as number;
      expect(source).toBeGreaterThanOrEqual(ephemeralPortRange().min);
      await expect(listen(source)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      client.destroy();
      await close(server);
    }
  });
});
