// S3Storage against a real S3-compatible server (SeaweedFS from tools/services.d/10-s3.sh).
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isSluiceError } from '@sluice/errors';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { LocalFileCache, S3Storage, S3_STORAGE_CHANNELS, type S3DownloadEvent, type S3StorageOptions } from '../src/storage/s3-storage';
import { testS3 } from '@sluice/testing';
import type { S3Client } from '@aws-sdk/client-s3';

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const n of await readdir(dir)) total += (await stat(path.join(dir, n))).size;
  return total;
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('S3Storage on a real S3 server', () => {
  const s3 = testS3();
  const opened: S3Storage[] = [];
  let workDir: string;
  let root: string; // this run's table prefix inside the test bucket

  const cleanups: (() => void)[] = [];
  const onCleanup = (fn: () => void) => cleanups.push(fn);
  afterEach(() => {
    for (const fn of cleanups.splice(0)) fn();
  });

  function open(extra: Partial<S3StorageOptions> = {}): S3Storage {
    const storage = new S3Storage({
      ...s3,
      prefix: root,
      cache: { dir: path.join(workDir, 'cache'), maxBytes: 64 * 1024 * 1024 },
      requestTimeoutMs: 10_000,
      ...extra,
    });
    opened.push(storage);
    return storage;
  }

  beforeAll(async () => {
    const base = process.env.SLUICE_TEST_DIR ?? os.tmpdir();
    await mkdir(base, { recursive: true });
    workDir = await mkdtemp(path.join(base, 's3-storage-'));
    root = `it/s3-storage-${randomUUID()}`;
  });

  afterAll(async () => {
    const cleaner = open();
    await cleaner.delete((await cleaner.list('')).map((o) => o.key));
    for (const s of opened) s.destroy();
    await rm(workDir, { recursive: true, force: true });
  });

  it('round-trips bytes, including empty objects and partition-style keys', async () => {
    const storage = open();
    const all = new Uint8Array(256).map((_, i) => i);
    const keys = ['rt/plain.bin', 'rt/region=US%252FEast/part-00000-a b.snappy.parquet', 'rt/ünïcode/ключ.json', 'rt/empty'];
    await storage.put(keys[0], all);
    await storage.put(keys[1], bytes('partitioned'));
    await storage.put(keys[2], bytes('{"a":1}'));
    await storage.put(keys[3], new Uint8Array(0));
    expect(Buffer.from(await storage.get(keys[0])).equals(Buffer.from(all))).toBe(true);
    expect(text(await storage.get(keys[1]))).toBe('partitioned');
    expect(text((await storage.getIfExists(keys[2])) as Uint8Array)).toBe('{"a":1}');
    expect((await storage.get(keys[3])).length).toBe(0);

    const head = await storage.head(keys[0]);
    expect(head).toMatchObject({ key: keys[0], size: 256 });
    expect(Math.abs((head?.modifiedMs ?? 0) - Date.now())).toBeLessThan(60_000);

    await storage.put(keys[1], bytes('overwritten'));
    expect(text(await storage.get(keys[1]))).toBe('overwritten');
    expect((await storage.list('rt/')).map((o) => o.key)).toEqual([...keys].sort());
  });

  it('reports missing keys: get throws LAKE_NOT_FOUND, getIfExists and head give undefined', async () => {
    const storage = open();
    await expect(storage.get('missing/nothing.json')).rejects.toMatchObject({ code: 'LAKE_NOT_FOUND', retryable: false });
    await expect(storage.getIfExists('missing/nothing.json')).resolves.toBeUndefined();
    await expect(storage.head('missing/nothing.json')).resolves.toBeUndefined();
    await expect(storage.localPath('missing/nothing.parquet')).rejects.toMatchObject({ code: 'LAKE_NOT_FOUND' });
    expect(await storage.list('missing/')).toEqual([]);
  });

  it('a key the server refuses (too long) is a non-retryable LAKE_STORAGE_REQUEST_REJECTED', async () => {
    const storage = open();
    for (const key of ['x'.repeat(300), `${'y'.repeat(200)}/`.repeat(6) + 'z']) {
      await expect(storage.put(key, bytes('x'))).rejects.toMatchObject({ code: 'LAKE_STORAGE_REQUEST_REJECTED', retryable: false });
      await expect(storage.putIfAbsent(key, bytes('x'))).rejects.toMatchObject({ code: 'LAKE_STORAGE_REQUEST_REJECTED', retryable: false });
    }
  });

  it('lists more than 1000 keys across pages, sorted, and deletes them in batches', async () => {
    const storage = open();
    const count = 1100;
    const keys = Array.from({ length: count }, (_, i) => `many/${String(i).padStart(5, '0')}-${i % 7}.json`);
    for (let i = 0; i < keys.length; i += 64) {
      await Promise.all(keys.slice(i, i + 64).map((k) => storage.put(k, bytes(k))));
    }
    await storage.put('many-sibling/x.json', bytes('not under many/'));

    const listed = await storage.list('many/');
    expect(listed).toHaveLength(count);
    expect(listed.map((o) => o.key)).toEqual([...keys].sort());
    expect(listed.every((o, i) => o.size === keys[i].length && o.modifiedMs > 0)).toBe(true);
    expect((await storage.list('many/0012')).map((o) => o.key)).toEqual(keys.slice(120, 130));
    // A limited listing is the first keys in order: one page for the first key, two past 1,000.
    expect((await storage.list('many/', { limit: 1 })).map((o) => o.key)).toEqual(keys.slice(0, 1));
    expect((await storage.list('many/0012', { limit: 3 })).map((o) => o.key)).toEqual(keys.slice(120, 123));
    expect((await storage.list('many/', { limit: 1050 })).map((o) => o.key)).toEqual(keys.slice(0, 1050));

    await storage.delete([...keys, 'many/never-existed.json']);
    expect(await storage.list('many/')).toEqual([]);
    expect(await storage.list('many-sibling/')).toHaveLength(1);
    await storage.delete([]);
  });

  // Vacuum listed the whole table, a month of log files included (2.6M keys at a commit a second).
  it('a listing that excludes a prefix leaves its keys out and lists on past it instead of paging through', async () => {
    const storage = open();
    const log = Array.from({ length: 2_100 }, (_, i) => `ex/_delta_log/${String(i).padStart(20, '0')}.json`);
    const data = ['ex/0.parquet', 'ex/a.parquet', 'ex/p=1/b.parquet', 'ex/z/c.parquet'];
    for (let i = 0; i < log.length; i += 64) await Promise.all(log.slice(i, i + 64).map((k) => storage.put(k, bytes('{}'))));
    for (const k of data) await storage.put(k, bytes(k));
    let pages = 0;
    const client = (storage as unknown as { client: S3Client }).client;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'ListObjectsV2Command') pages += 1;
        return next(args);
      },
      { step: 'initialize', name: 'countListPages' },
    );

    expect((await storage.list('ex/', { exclude: ['ex/_delta_log/'] })).map((o) => o.key)).toEqual(data);
    expect(pages).toBe(2); // the first page (0.parquet and 999 log keys), then past the log; paging through is 3
    expect((await storage.list('ex/', { exclude: ['ex/_delta_log/'], limit: 2 })).map((o) => o.key)).toEqual(data.slice(0, 2));
    expect((await storage.list('ex/')).length).toBe(log.length + data.length);

    // A server that ignores StartAfter answers the skip with the first page again: that page is
    // dropped and the listing pages through (it asked for the same page forever, or listed twice).
    const ignoring = open();
    (ignoring as unknown as { client: S3Client }).client.middlewareStack.add(
      (next) => async (args) => {
        delete (args.input as { StartAfter?: string }).StartAfter;
        return next(args);
      },
      { step: 'initialize', name: 'ignoreStartAfter' },
    );
    expect((await ignoring.list('ex/', { exclude: ['ex/_delta_log/'] })).map((o) => o.key)).toEqual(data);

    // A listing after a key: the log's newest part in one page, on a server that ignores
    // StartAfter too (it pages through and leaves the earlier keys out itself).
    pages = 0;
    const after = { startAfter: `ex/_delta_log/${String(2_049).padStart(20, '0')}.~` };
    expect((await storage.list('ex/_delta_log/', after)).map((o) => o.key)).toEqual(log.slice(2_050));
    expect(pages).toBe(1);
    expect((await ignoring.list('ex/_delta_log/', after)).map((o) => o.key)).toEqual(log.slice(2_050));
    expect((await storage.list('ex/', { ...after, exclude: ['ex/_delta_log/'] })).map((o) => o.key)).toEqual(data.slice(1));
    // After a key below an excluded prefix: the skip past it still happens (two pages, not three),
    // and on a server that ignores StartAfter the listing pages through to the same answer.
    pages = 0;
    expect((await storage.list('ex/', { startAfter: 'ex/0.parquet', exclude: ['ex/_delta_log/'] })).map((o) => o.key)).toEqual(data.slice(1));
    expect(pages).toBe(2);
    expect((await ignoring.list('ex/', { startAfter: 'ex/0.parquet', exclude: ['ex/_delta_log/'] })).map((o) => o.key)).toEqual(data.slice(1));
    await storage.delete([...log, ...data]);
  });

  it('putIfAbsent creates once and never overwrites', async () => {
    const storage = open();
    expect(await storage.putIfAbsent('_delta_log/00000000000000000000.json', bytes('first'))).toBe(true);
    expect(await storage.putIfAbsent('_delta_log/00000000000000000000.json', bytes('second'))).toBe(false);
    expect(text(await storage.get('_delta_log/00000000000000000000.json'))).toBe('first');
  });

  it('putIfAbsent race: of concurrent writers on one key exactly one wins, every time', async () => {
    // Separate clients (own sockets), as separate processes would be.
    const writers = [open(), open(), open(), open()];
    const rounds = 30;
    let wins = 0;
    for (let round = 0; round < rounds; round++) {
      const key = `race/_delta_log/${String(round).padStart(20, '0')}.json`;
      const results = await Promise.all(writers.map((w, i) => w.putIfAbsent(key, bytes(`writer-${i}-round-${round}`))));
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      expect(winners).toHaveLength(1);
      expect(text(await writers[0].get(key))).toBe(`writer-${winners[0]}-round-${round}`);
      wins += winners.length;
    }
    expect(wins).toBe(rounds);
  });

  it('putIfAbsent whose response was lost still reports its own write after the SDK retries', async () => {
    // A TCP relay to the real server that swallows one response and resets the connection: the
    // server has stored the object, the SDK sees a network error and resends, the resend gets
    // 412. Comparing the stored bytes tells "my first attempt landed" from "someone else won".
    const target = new URL(s3.endpoint);
    let dropNext = false;
    const sockets = new Set<net.Socket>();
    const relay = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      sockets.add(client).add(upstream);
      client.pipe(upstream);
      upstream.on('data', (chunk) => {
        if (dropNext) {
          dropNext = false;
          client.resetAndDestroy();
          upstream.destroy();
        } else {
          client.write(chunk);
        }
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    try {
      const port = (relay.address() as net.AddressInfo).port;
      const storage = open({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 3 });
      const direct = open();
      await storage.ensureConditionalPut(); // the probe's own PUTs pass untouched

      dropNext = true;
      expect(await storage.putIfAbsent('lost/00000000000000000001.json', bytes('mine'))).toBe(true);
      expect(dropNext).toBe(false); // a response really was swallowed
      expect(text(await direct.get('lost/00000000000000000001.json'))).toBe('mine');

      // Same lost response, but another writer had already created the key: still false.
      await direct.put('lost/00000000000000000002.json', bytes('theirs'));
      dropNext = true;
      expect(await storage.putIfAbsent('lost/00000000000000000002.json', bytes('mine'))).toBe(false);
      expect(text(await direct.get('lost/00000000000000000002.json'))).toBe('theirs');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });

  it('verifies that the server honours If-None-Match before trusting it', async () => {
    await expect(open().ensureConditionalPut()).resolves.toBeUndefined();

    // A server that ignores the header, played by an HTTP proxy that stores every conditional PUT
    // with a plain one (the header is signed, so it cannot just be dropped from the request).
    const target = new URL(s3.endpoint);
    const plain = open();
    let stripped = 0;
    const proxy = http.createServer((req, res) => {
      void (async () => {
        const body = Buffer.concat(await req.toArray());
        if (req.method === 'PUT' && req.headers['if-none-match'] !== undefined) {
          stripped++;
          const key = decodeURIComponent(new URL(req.url ?? '/', 'http://proxy').pathname).slice(`/${s3.bucket}/${root}/`.length);
          await plain.put(key, body);
          res.writeHead(200).end();
          return;
        }
        const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        upstream.end(body);
      })().catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const port = (proxy.address() as net.AddressInfo).port;
      const storage = open({ endpoint: `http://127.0.0.1:${port}` });
      await expect(storage.ensureConditionalPut()).rejects.toMatchObject({ code: 'LAKE_STORAGE_CONDITIONAL_PUT_UNSUPPORTED', details: { uri: storage.uri } });
      expect(stripped).toBe(2); // both probe PUTs went through the header-less path
      // Nor does a commit go through it: the refusal, not a silent overwrite.
      await expect(storage.putIfAbsent('unconditional/_delta_log/00000000000000000000.json', bytes('x'))).rejects.toMatchObject({ code: 'LAKE_STORAGE_CONDITIONAL_PUT_UNSUPPORTED' });
      expect(await plain.head('unconditional/_delta_log/00000000000000000000.json')).toBeUndefined();
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('single-writer mode still refuses to overwrite', async () => {
    const storage = open({ commitMode: 'single-writer' });
    expect(await storage.putIfAbsent('sw/00000000000000000000.json', bytes('a'))).toBe(true);
    expect(await storage.putIfAbsent('sw/00000000000000000000.json', bytes('b'))).toBe(false);
    expect(text(await storage.get('sw/00000000000000000000.json'))).toBe('a');
  });

  it('localPath downloads into a cache that stays within its byte bound', async () => {
    const cacheDir = path.join(workDir, 'bounded-cache');
    const cache = new LocalFileCache({ dir: cacheDir, maxBytes: 3 * 10_000 + 100 });
    const storage = open({ cache });
    const keys = Array.from({ length: 6 }, (_, i) => `cache/part-${i}.snappy.parquet`);
    for (const [i, k] of keys.entries()) await storage.put(k, new Uint8Array(10_000).fill(i));

    const downloads: S3DownloadEvent[] = [];
    const onDownload = (e: unknown) => downloads.push(e as S3DownloadEvent);
    subscribe(S3_STORAGE_CHANNELS.download, onDownload);
    onCleanup(() => unsubscribe(S3_STORAGE_CHANNELS.download, onDownload));
    for (const [i, k] of keys.entries()) {
      const file = await storage.localPath(k);
      expect(file.endsWith('.parquet')).toBe(true);
      const content = await readFile(file);
      expect(content.length).toBe(10_000);
      expect(content.every((b) => b === i)).toBe(true);
      expect(await dirBytes(cacheDir)).toBeLessThanOrEqual(cache.maxBytes);
    }
    expect(cache.sizeBytes).toBe(30_000);
    expect(downloads.map((d) => [d.key, d.bytes])).toEqual(keys.map((k) => [k, 10_000]));

    // A hit serves the same file without downloading again (its mtime does not move).
    const hit = await storage.localPath(keys[5]);
    const before = (await stat(hit)).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    expect(await storage.localPath(keys[5])).toBe(hit);
    expect((await stat(hit)).mtimeMs).toBe(before);

    // Concurrent requests for the same key share one download and one file.
    const paths = await Promise.all(Array.from({ length: 5 }, () => storage.localPath(keys[0])));
    expect(new Set(paths).size).toBe(1);
    expect(downloads).toHaveLength(keys.length + 1); // keys[0] had been evicted: one download for five calls
    expect(await dirBytes(cacheDir)).toBeLessThanOrEqual(cache.maxBytes);
  });

  it('putFile streams a local file up and keeps it as the cached copy', async () => {
    const cache = new LocalFileCache({ dir: path.join(workDir, 'putfile-cache'), maxBytes: 16 * 1024 * 1024 });
    const storage = open({ cache });
    const local = path.join(workDir, 'upload.parquet');
    const content = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) % 251;
    await writeFile(local, content);

    await storage.putFile('files/bucket=1/part-upload.snappy.parquet', local);
    await expect(stat(local)).rejects.toMatchObject({ code: 'ENOENT' }); // moved into the cache
    expect(cache.sizeBytes).toBe(content.length);
    expect(Buffer.from(await storage.get('files/bucket=1/part-upload.snappy.parquet')).equals(content)).toBe(true);
    const cached = await storage.localPath('files/bucket=1/part-upload.snappy.parquet');
    expect((await readFile(cached)).equals(content)).toBe(true);

    await expect(storage.putFile('files/missing.parquet', path.join(workDir, 'no-such-file'))).rejects.toMatchObject({
      code: 'LAKE_STORAGE_FAILED',
      retryable: false,
    });
    expect(await storage.head('files/missing.parquet')).toBeUndefined();
  });

  it('wrong credentials: a typed, non-retryable LAKE_STORAGE_ACCESS_DENIED', async () => {
    const storage = open({ credentials: { accessKeyId: s3.credentials.accessKeyId, secretAccessKey: 'not-the-secret' } });
    for (const op of [() => storage.get('rt/plain.bin'), () => storage.put('x/denied', bytes('x')), () => storage.list('')]) {
      const err = await op().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isSluiceError(err, 'LAKE_STORAGE_ACCESS_DENIED')).toBe(true);
      expect(err).toMatchObject({ retryable: false, details: { httpStatus: 403 } });
    }
    const stranger = open({ credentials: { accessKeyId: 'nobody', secretAccessKey: 'nothing' } });
    await expect(stranger.head('rt/plain.bin')).rejects.toMatchObject({ code: 'LAKE_STORAGE_ACCESS_DENIED', retryable: false });
    await expect(stranger.putIfAbsent('x/denied', bytes('x'))).rejects.toMatchObject({ code: 'LAKE_STORAGE_ACCESS_DENIED' });
  });

  it('missing bucket: a typed, non-retryable LAKE_STORAGE_BUCKET_NOT_FOUND', async () => {
    const storage = open({ bucket: `no-such-bucket-${randomUUID().slice(0, 8)}` });
    await expect(storage.list('')).rejects.toMatchObject({ code: 'LAKE_STORAGE_BUCKET_NOT_FOUND', retryable: false });
    await expect(storage.get('a')).rejects.toMatchObject({ code: 'LAKE_STORAGE_BUCKET_NOT_FOUND', retryable: false });
  });

  it('server down: a typed, retryable LAKE_STORAGE_UNAVAILABLE after bounded retries', async () => {
    const storage = open({ endpoint: `http://127.0.0.1:${await closedPort()}`, maxAttempts: 2, connectTimeoutMs: 1_000 });
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    subscribe(S3_STORAGE_CHANNELS.error, onError);
    onCleanup(() => unsubscribe(S3_STORAGE_CHANNELS.error, onError));
    const started = Date.now();
    for (const op of [() => storage.get('a'), () => storage.putIfAbsent('a', bytes('x')), () => storage.list(''), () => storage.localPath('a')]) {
      await expect(op()).rejects.toMatchObject({ code: 'LAKE_STORAGE_UNAVAILABLE', retryable: true });
    }
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(errors).toContainEqual({ uri: storage.uri, operation: 'list', code: 'LAKE_STORAGE_UNAVAILABLE', retryable: true, httpStatus: undefined });
  });
});
