import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultyS3Proxy } from './s3-proxy';

// A loopback echo server stands in for the object store: what matters here is what the proxy
// forwards, delays and refuses.
describe('FaultyS3Proxy', () => {
  let upstream: http.Server;
  let hits = 0;
  let proxy: FaultyS3Proxy;

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      hits += 1;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(207, { 'content-type': 'application/json', 'x-upstream': 'yes' });
        res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, auth: req.headers.authorization, body: Buffer.concat(chunks).toString() }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
    proxy = await FaultyS3Proxy.start(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    await proxy.close();
    await new Promise<void>((r) => upstream.close(() => r()));
  });

  it('forwards method, path, headers (the Host a signature covers) and body, and the answer unchanged', async () => {
    proxy.set({});
    const r = await fetch(`${proxy.url}/bucket/key?x-id=PutObject`, { method: 'PUT', headers: { authorization: 'AWS4-HMAC-SHA256 sig' }, body: 'payload' });
    expect(r.status).toBe(207);
    expect(r.headers.get('x-upstream')).toBe('yes');
    expect(await r.json()).toEqual({ method: 'PUT', url: '/bucket/key?x-id=PutObject', host: new URL(proxy.url).host, auth: 'AWS4-HMAC-SHA256 sig', body: 'payload' });
  });

  it('adds the delay before forwarding', async () => {
    proxy.set({ delayMs: 300 });
    const started = performance.now();
    const r = await fetch(`${proxy.url}/bucket/slow`);
    expect(r.status).toBe(207);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(proxy.stats.delayed).toBeGreaterThanOrEqual(1);
  });

  it('refuses with S3 throttling (503 SlowDown) without reaching the server, and stops when cleared', async () => {
    proxy.set({ failRatio: 1 });
    const before = hits;
    const r = await fetch(`${proxy.url}/bucket/key`, { method: 'PUT', body: 'lost' });
    expect(r.status).toBe(503);
    expect(await r.text()).toContain('<Code>SlowDown</Code>');
    expect(hits).toBe(before);
    expect(proxy.stats.failed).toBeGreaterThanOrEqual(1);
    proxy.set({});
    expect((await fetch(`${proxy.url}/bucket/key`)).status).toBe(207);
    expect(hits).toBe(before + 1);
  });

  it('carries out a request and then loses its answer (503 SlowDown), when told to', async () => {
    proxy.set({ loseRatio: 1 });
    const before = hits;
    const r = await fetch(`${proxy.url}/bucket/key`, { method: 'PUT', body: 'landed' });
    expect(r.status).toBe(503);
    expect(await r.text()).toContain('<Code>SlowDown</Code>');
    expect(hits).toBe(before + 1);
    expect(proxy.stats.lost).toBeGreaterThanOrEqual(1);
    // Not a table commit; a PUT of the next Delta log file is counted as one.
    const commits = proxy.stats.lostCommits;
    await fetch(`${proxy.url}/bucket/t/_delta_log/00000000000000000007.json`, { method: 'PUT', body: '{}' });
    expect(proxy.stats.lostCommits).toBe(commits + 1);
    await fetch(`${proxy.url}/bucket/t/_delta_log/00000000000000000007.json`, { method: 'GET' });
    expect(proxy.stats.lostCommits).toBe(commits + 1);
    proxy.set({});
  });

  it('loses the answers of the next landed commits when told to, whatever the ratio draws, and only theirs', async () => {
    proxy.set({ loseCommits: 2 });
    const commit = (v: number) => fetch(`${proxy.url}/bucket/t/_delta_log/${String(v).padStart(20, '0')}.json`, { method: 'PUT', body: '{}' });
    const before = { ...proxy.stats };
    expect((await fetch(`${proxy.url}/bucket/t/part-1.parquet`, { method: 'PUT', body: 'data' })).status).toBe(207);
    expect((await commit(8)).status).toBe(503);
    expect((await commit(9)).status).toBe(503);
    expect((await commit(10)).status).toBe(207);
    expect(proxy.stats.lostCommits - before.lostCommits).toBe(2);
    expect(proxy.stats.commits - before.commits).toBe(3);
    proxy.set({});
  });

  it('answers 502 with the reason when the server is gone', async () => {
    const gone = await FaultyS3Proxy.start('http://127.0.0.1:9');
    try {
      const r = await fetch(`${gone.url}/bucket/key`);
      expect(r.status).toBe(502);
      expect(await r.text()).toMatch(/upstream failed/);
    } finally {
      await gone.close();
    }
  });
});
