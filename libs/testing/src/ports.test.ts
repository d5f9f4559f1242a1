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

describe('freePort', () => {
  it('hands out ports below the ephemeral range, each once, that a server can listen on', async () => {
    const { min } = ephemeralPortRange();
    const ports = [];
    for (let i = 0; i < 20; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20000);
      expect(port).toBeLessThan(min);
    }
    await close(await listen(ports[0]));
  });

  it('with following ports, all of them are free and below the ephemeral range', async () => {
    const { min } = ephemeralPortRange();
    const port = await freePort({ following: 1 });
    expect(port + 1).toBeLessThan(min);
    const servers = [await listen(port), await listen(port + 1)];
    await Promise.all(servers.map(close));
  });

  // Why not listen(0): a connection's source port comes from the ephemeral range and holds the
  // port against a server for as long as the connection lives.
  it('a port an outgoing connection was given cannot be listened on, which is why freePort stays below the range', async () => {
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
