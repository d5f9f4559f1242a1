import http from 'node:http';
import { Writable } from 'node:stream';
import net, { type AddressInfo } from 'node:net';
import { order } from '../test/support';
import { buildApp, type IngestApp } from './app';
import { createTelemetry, type Telemetry } from '@sluice/telemetry';
import { SluiceError } from '@sluice/errors';
import type { EventPublisher } from './delivery/publisher';

// The in-flight budget bounds the request bytes ingest holds. A reservation used to be released
// when the response closed, which a client going away does at once, while the handler still held
// the body waiting on Kafka: a client that timed out and retried was reserved twice, the first
// body still in memory.
const KEY = 'k-0123456789abcdefghijklmnopqrstuv';
/** A second producer's key (for the per-producer bound). */
const OTHER_KEY = 'k-other-0123456789abcdefghijklmnop';

function build(publisher: EventPublisher, maxInFlightBytesPerProducer?: number, telemetry?: Telemetry): IngestApp {
  return buildApp({
    publisher,
    telemetry,
    apiKeys: [
      { producer: 'p', key: KEY, contracts: ['*'], envelopeProducers: ['*'] },
      { producer: 'q', key: OTHER_KEY, contracts: ['*'], envelopeProducers: ['*'] },
    ],
    rawTopic: 'raw',
    limits: {
      maxBodyBytes: 1 << 20,
      maxBatchEvents: 100,
      maxEventBytes: 1 << 16,
      maxDepth: 32,
      maxFutureSkewMs: 300_000,
      maxEventAgeMs: 7 * 86_400_000,
      maxInFlightBytes: 4 << 20,
      maxInFlightBytesPerProducer,
    },
    retryAfterSeconds: 1,
  });
}

async function listen(ingest: IngestApp): Promise<number> {
  await ingest.app.listen({ host: '127.0.0.1', port: 0 });
  return (ingest.app.server.address() as AddressInfo).port;
}

/** A publisher whose first publish waits for `deliver()`; `started` resolves when it is called. */
function heldPublisher() {
  let publishing: () => void = () => undefined;
  const started = new Promise<void>((r) => (publishing = r));
  let deliver: () => void = () => undefined;
  const delivered = new Promise<void>((r) => (deliver = r));
  const publisher: EventPublisher = {
    hasCapacity: () => true,
    isAvailable: () => true,
    publish: async () => {
      publishing();
      await delivered;
    },
  };
  return { publisher, started, deliver };
}

/** Waits until `ok()`; throws when it is still false after `ms` (a silent return let a test pass on a state never reached). */
async function until(ok: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  if (!ok()) throw new Error(`timed out after ${ms} ms waiting for ${ok.toString()}`);
}

/** A raw client connection: what the server has sent so far, and whether it closed the connection. */
async function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  let closed = false;
  socket.on('data', (d) => (received += d.toString()));
  socket.once('close', () => (closed = true));
  await new Promise((r) => socket.once('connect', r));
  return { socket, received: () => received, closed: () => closed };
}

const eventHead = (length: number, more = '') =>
  `POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${more}\r\n`;

describe('the in-flight budget', () => {
  let ingest: IngestApp | undefined;
  afterEach(async () => {
    await ingest?.app.close();
    ingest = undefined;
  });

  // Node gives a pipelined request its response only when the one ahead of it is done; a client
  // that resets the connection before then must not leave that request's reservation behind (a
  // review suspected it would: sixteen such requests at the default limits and every client would
  // get 429). Holds on this Node: the queued response is closed with the socket.
  it('gives back the reservation of a pipelined request whose client left before its turn', async () => {
    const held = heldPublisher();
    ingest = build(held.publisher);
    const port = await listen(ingest);
    const body = JSON.stringify(order());
    const { socket } = await rawConnection(port);
    // A, whose handler waits on Kafka, then B's headers only: B is reserved while queued behind A.
    socket.write(eventHead(Buffer.byteLength(body)) + body + eventHead(100_000));
    await held.started;
    await until(() => ingest!.budget.inUse === Buffer.byteLength(body) + 100_000);
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body) + 100_000);
    socket.resetAndDestroy(); // the connection reset, as a client that gave up does
    held.deliver();
    await until(() => ingest!.budget.inUse === 0);
    expect(ingest.budget.inUse).toBe(0);
  });

  it('stays reserved while a handler still holds the body of a request whose client went away', async () => {
    const { publisher, started, deliver } = heldPublisher();
    ingest = build(publisher);
    const port = await listen(ingest);
    const body = JSON.stringify(order());
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/events', method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => undefined); // the client aborts below
    req.end(body);
    await started;
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body));

    req.destroy(); // the client gives up while Kafka has not answered
    await new Promise((r) => setTimeout(r, 100));
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body));

    deliver();
    await until(() => ingest!.budget.inUse === 0);
    expect(ingest.budget.inUse).toBe(0);
  });

  // One key with many connections could hold the whole budget, and every other producer got 429
  // until it let go.
  it('keeps one producer to its share, so another producer still gets in', async () => {
    ingest = build(heldPublisher().publisher, 1 << 20);
    const port = await listen(ingest);
    const open: net.Socket[] = [];
    // A request that declares `length` bytes and never sends them: it holds its reservation.
    const holding = async (key: string, length: number) => {
      const c = await rawConnection(port);
      open.push(c.socket);
      c.socket.write(`POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`);
      return c;
    };
    const size = 600 * 1024;
    try {
      const first = await holding(KEY, size);
      await until(() => ingest!.budget.inUseBy('p') === size);

      const second = await holding(KEY, size);
      await until(() => second.received().includes('\r\n\r\n{'));
      expect(second.received()).toMatch(/^HTTP\/1\.1 429 /);
      expect(second.received()).toMatch(/"code":"INGEST_OVERLOADED"/);
      expect(second.received()).toMatch(/"details":\{"limitBytes":1048576,"scope":"producer"\}/);

      await holding(OTHER_KEY, size);
      await until(() => ingest!.budget.inUseBy('q') === size);
      expect([ingest.budget.inUseBy('p'), ingest.budget.inUseBy('q'), ingest.budget.inUse]).toEqual([size, size, 2 * size]);

      // Its share frees as its request ends; it gets in again.
      first.socket.destroy();
      await until(() => ingest!.budget.inUseBy('p') === 0);
      const third = await holding(KEY, size);
      await until(() => ingest!.budget.inUseBy('p') === size);
      expect(third.received()).toBe('');
    } finally {
      for (const s of open) s.destroy();
    }
  });
});

// fastify read a not-found request's whole body before its handler ran: no key asked, outside the
// budget, so anyone could make ingest hold a body up to the limit on every connection.
describe('a request to no route', () => {
  it('is answered 404 before its body is read, and its connection closed', async () => {
    const ingest = build(heldPublisher().publisher);
    try {
      const port = await listen(ingest);
      const client = await rawConnection(port);
      // Headers announcing a megabyte, and not one byte of it.
      client.socket.write('POST /v1/event HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n');
      await until(() => client.closed(), 3_000);
      expect(client.received()).toMatch(/^HTTP\/1\.1 404 /);
      expect(client.received()).toContain('INGEST_NOT_FOUND');
      expect(client.closed()).toBe(true);
      expect(ingest.budget.inUse).toBe(0);
    } finally {
      await ingest.app.close();
    }
  });
});

// Node answered `Expect: 100-continue` itself, before any check: a client without a key, or with a
// body over the limit, was invited to send it.
describe('Expect: 100-continue', () => {
  let ingest: IngestApp | undefined;
  afterEach(async () => {
    await ingest?.app.close();
    ingest = undefined;
  });

  it('is answered 100 Continue only once the key and the size pass', async () => {
    ingest = build(heldPublisher().publisher);
    const port = await listen(ingest);
    const body = JSON.stringify(order());
    const client = await rawConnection(port);
    client.socket.write(eventHead(Buffer.byteLength(body), 'expect: 100-continue\r\n'));
    await until(() => client.received().includes('\r\n\r\n'), 3_000);
    expect(client.received()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body));
    client.socket.destroy();
  });

  it.each([
    ['an unknown key', `authorization: Bearer ${'x'.repeat(30)}\r\ncontent-length: 10`, 401, 'INGEST_UNAUTHENTICATED', 'application/json'],
    ['a body over the limit', `authorization: Bearer ${KEY}\r\ncontent-length: ${(1 << 20) + 1}`, 413, 'INGEST_BODY_TOO_LARGE', 'application/json'],
    // The media type was judged only after the body had been invited and read.
    ['a media type it does not take', `authorization: Bearer ${KEY}\r\ncontent-length: 10`, 415, 'INGEST_UNSUPPORTED_MEDIA_TYPE', 'text/plain'],
    ['a body without a media type', `authorization: Bearer ${KEY}\r\ncontent-length: 10`, 415, 'INGEST_UNSUPPORTED_MEDIA_TYPE', undefined],
  ])('is refused without 100 Continue for %s, and the connection closed', async (_case, headers, status, code, contentType) => {
    ingest = build(heldPublisher().publisher);
    const port = await listen(ingest);
    const client = await rawConnection(port);
    const type = contentType === undefined ? '' : `content-type: ${contentType}\r\n`;
    client.socket.write(`POST /v1/events HTTP/1.1\r\nhost: x\r\n${type}${headers}\r\nexpect: 100-continue\r\n\r\n`);
    await until(() => client.closed(), 3_000);
    expect(client.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(client.received()).toContain(code);
    expect(client.received()).not.toContain('100 Continue');
    expect(client.closed()).toBe(true);
    expect(ingest.budget.inUse).toBe(0);
  });
});

// Refused with keep-alive, the connection stayed open and Node read and discarded the declared
// body up to the request timeout: an unauthenticated 10 GB upload kept the server reading.
it.each([
  ['an unknown key', `authorization: Bearer ${'x'.repeat(30)}\r\ncontent-length: 10000000000`, 401],
  ['a body over the limit', `authorization: Bearer ${KEY}\r\ncontent-length: 10000000000`, 413],
])('closes the connection when it refuses %s before reading the body', async (_case, headers, status) => {
  const ingest = build(heldPublisher().publisher);
  try {
    const port = await listen(ingest);
    const client = await rawConnection(port);
    client.socket.write(`POST /v1/events HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${headers}\r\n\r\n`);
    client.socket.write(Buffer.alloc(64 * 1024, 0x20));
    await until(() => client.closed(), 3_000);
    expect(client.received()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(client.received()).toMatch(/\r\nconnection: close\r\n/i);
    expect(ingest.budget.inUse).toBe(0);
  } finally {
    await ingest.app.close();
  }
});

// Refused for load with a body within the limit, the connection stays: a client backing off
// re-sends on it (closing it made every 429 a reconnect, and a TLS handshake, under load).
it('keeps the connection of a known key refused for load (429) with a bounded body, and answers the next request on it', async () => {
  const ingest = build(heldPublisher().publisher, 1 << 20);
  const open: net.Socket[] = [];
  try {
    const port = await listen(ingest);
    const holder = await rawConnection(port);
    open.push(holder.socket);
    holder.socket.write(eventHead(1 << 20)); // holds the producer's whole share
    await until(() => ingest.budget.inUseBy('p') === 1 << 20);
    const client = await rawConnection(port);
    open.push(client.socket);
    const body = JSON.stringify(order());
    client.socket.write(eventHead(Buffer.byteLength(body)) + body);
    await until(() => /\r\n\r\n\{.*\}$/s.test(client.received()));
    expect(client.received()).toMatch(/^HTTP\/1\.1 429 /);
    expect(client.received()).not.toMatch(/\r\nconnection: close\r\n/i);
    holder.socket.destroy();
    await until(() => ingest.budget.inUseBy('p') === 0);
    client.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
    await until(() => /HTTP\/1\.1 200 /.test(client.received()));
    expect(client.closed()).toBe(false);
  } finally {
    for (const s of open) s.destroy();
    await ingest.app.close();
  }
});

// RFC 9110: an HTTP/1.0 request's expectation is ignored (its client does not know 100 Continue).
it('sends no 100 Continue to an HTTP/1.0 request that names the expectation', async () => {
  const held = heldPublisher();
  const app = build(held.publisher);
  try {
    const port = await listen(app);
    const body = JSON.stringify(order());
    const client = await rawConnection(port);
    client.socket.write(eventHead(Buffer.byteLength(body), 'expect: 100-continue\r\n').replace('HTTP/1.1', 'HTTP/1.0') + body);
    await held.started;
    held.deliver();
    await until(() => client.closed(), 3_000);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
  } finally {
    await app.app.close();
  }
});

// Node kept the first of several Authorization headers; a proxy in front may have read another.
it('refuses a request with two Authorization headers, one of them valid', async () => {
  const ingest = build(heldPublisher().publisher);
  try {
    const port = await listen(ingest);
    const client = await rawConnection(port);
    client.socket.write(eventHead(2, `authorization: Bearer ${'y'.repeat(30)}\r\n`) + '{}');
    await until(() => client.received().includes('}'), 3_000);
    expect(client.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.received()).toContain('INGEST_UNAUTHENTICATED');
  } finally {
    await ingest.app.close();
  }
});

// fastify answered requests racing the drain with its own bare 503: no Retry-After, no code.
it('answers a request whose headers were arriving when the drain began with INGEST_SHUTTING_DOWN and Retry-After', async () => {
  const held = heldPublisher();
  const ingest = build(held.publisher);
  const port = await listen(ingest);
  const body = JSON.stringify(order());
  const busy = await rawConnection(port);
  busy.socket.write(eventHead(Buffer.byteLength(body)) + body); // holds the drain open
  await held.started;
  const late = await rawConnection(port);
  const head = eventHead(Buffer.byteLength(body));
  late.socket.write(head.slice(0, 20));
  await new Promise((r) => setTimeout(r, 50));
  ingest.beginShutdown();
  const closing = ingest.app.close();
  late.socket.write(head.slice(20) + body);
  await until(() => late.closed(), 3_000);
  held.deliver();
  await closing;
  await until(() => busy.closed(), 3_000);
  expect(late.received()).toMatch(/^HTTP\/1\.1 503 /);
  expect(late.received()).toContain('INGEST_SHUTTING_DOWN');
  expect(late.received().toLowerCase()).toContain('retry-after: 1');
  expect(busy.received()).toMatch(/^HTTP\/1\.1 200 /);
});

// Every failed publish was counted as `throttled`, so a Kafka outage looked like load shedding.
describe('events whose publish failed', () => {
  const failing = (code: string): EventPublisher => ({
    hasCapacity: () => true,
    isAvailable: () => true,
    publish: async () => {
      throw new SluiceError(code as never, `publish failed: ${code}`);
    },
  });

  it.each([
    ['KAFKA_TIMED_OUT', 503, 'unavailable'],
    ['KAFKA_QUEUE_FULL', 429, 'throttled'],
    ['KAFKA_MESSAGE_TOO_LARGE', 413, 'refused'],
  ])('a %s failure is answered %d and counted as %s', async (code, status, outcome) => {
    const telemetry = createTelemetry({ service: 'ingest', logLevel: 'silent', traces: { kind: 'memory' } });
    const ingest = build(failing(code), undefined, telemetry);
    try {
      const res = await ingest.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/x-ndjson' },
        payload: [order(), order()].map((e) => JSON.stringify(e)).join('\n'),
      });
      expect(res.statusCode).toBe(status);
      const text = await telemetry.metricsText();
      const counted = [...text.matchAll(/^sluice_ingest_events_in_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)/gm)].map((m) => [m[1], Number(m[2])]);
      expect(counted).toEqual([[outcome, 2]]);
    } finally {
      await ingest.app.close();
      await telemetry.shutdown();
    }
  });
});

it('accepts a producer\'s previous key during a rotation and logs its use at most once a minute', async () => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
  const telemetry = createTelemetry({ service: 'ingest', logDestination: sink, traces: { kind: 'memory' } });
  const ingest = buildApp({
    publisher: { hasCapacity: () => true, isAvailable: () => true, publish: async () => undefined },
    logger: telemetry.logger,
    apiKeys: [{ producer: 'p', key: OTHER_KEY, previousKeys: [KEY], contracts: ['*'], envelopeProducers: ['*'] }],
    rawTopic: 'raw',
    limits: { maxBodyBytes: 1 << 20, maxBatchEvents: 100, maxEventBytes: 1 << 16, maxDepth: 32, maxFutureSkewMs: 300_000, maxEventAgeMs: 7 * 86_400_000, maxInFlightBytes: 4 << 20 },
    retryAfterSeconds: 1,
  });
  const post = (key: string) =>
    ingest.app.inject({ method: 'POST', url: '/v1/events', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(order()) });
  try {
    const statuses = [(await post(KEY)).statusCode, (await post(OTHER_KEY)).statusCode, (await post(KEY)).statusCode];
    expect(statuses).toEqual([200, 200, 200]);
    const warnings = lines.map((l) => JSON.parse(l)).filter((l) => /previousKeys/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ producer: 'p', level: 'warn' });
    expect(lines.join('')).not.toContain(KEY);
  } finally {
    await ingest.app.close();
    await telemetry.shutdown();
  }
});

// A 500 is retryable in the catalog but went without Retry-After, which every retryable answer carries.
it('answers an unexpected failure with 500 INGEST_INTERNAL, Retry-After and none of its text', async () => {
  const publisher: EventPublisher = {
    hasCapacity: () => {
      throw new TypeError('internal detail 7f3a');
    },
    isAvailable: () => true,
    publish: async () => undefined,
  };
  const ingest = build(publisher);
  try {
    const port = await listen(ingest);
    const body = JSON.stringify(order());
    const res = await fetch(`http://127.0.0.1:${port}/v1/events`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body });
    const text = await res.text();
    expect({ status: res.status, retryAfter: res.headers.get('retry-after'), code: JSON.parse(text).error.code }).toEqual({ status: 500, retryAfter: '1', code: 'INGEST_INTERNAL' });
    expect(text).not.toContain('7f3a');
  } finally {
    await ingest.app.close();
  }
});

// Node removes the chunking and leaves the rest: a `gzip, chunked` body reached the splitter as
// gzip bytes and was judged as broken JSON, as gzip under Content-Encoding once was.
it('refuses a transfer coding other than chunked with 415 before reading the body', async () => {
  const ingest = build(heldPublisher().publisher);
  try {
    const port = await listen(ingest);
    const client = await rawConnection(port);
    const head = `POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n\r\n`;
    client.socket.write(`${head}5\r\nabcde\r\n0\r\n\r\n`);
    await until(() => client.received().includes('}'), 3_000);
    expect(client.received()).toMatch(/^HTTP\/1\.1 415 /);
    expect(client.received()).toContain('Transfer-Encoding gzip is not accepted');
  } finally {
    await ingest.app.close();
  }
});
