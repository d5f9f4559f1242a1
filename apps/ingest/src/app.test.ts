import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { order } from '../test/support';
import { buildApp, type IngestApp } from './app';
import type { EventPublisher } from './delivery/publisher';

// The in-flight budget bounds the request bytes ingest holds. A reservation used to be released
// when the response closed, which a client going away does at once, while the handler still held
// the body waiting on Kafka: a client that timed out and retried was reserved twice, the first
// body still in memory.
const KEY = 'k-0123456789abcdefghijklmnopqrstuv';

function build(publisher: EventPublisher): IngestApp {
  return buildApp({
    publisher,
    apiKeys: [{ producer: 'p', key: KEY, contracts: ['*'] }],
    rawTopic: 'raw',
    limits: { maxBodyBytes: 1 << 20, maxBatchEvents: 100, maxEventBytes: 1 << 16, maxDepth: 32, maxFutureSkewMs: 300_000, maxEventAgeMs: 7 * 86_400_000, maxInFlightBytes: 4 << 20 },
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

async function until(ok: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

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
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise((r) => socket.once('connect', r));
    const head = (length: number) => `POST /v1/events HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${KEY}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;
    // A, whose handler waits on Kafka, then B's headers only: B is reserved while queued behind A.
    socket.write(head(Buffer.byteLength(body)) + body + head(100_000));
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
});

// fastify read a not-found request's whole body before its handler ran: no key asked, outside the
// budget, so anyone could make ingest hold a body up to the limit on every connection.
describe('a request to no route', () => {
  it('is answered 404 before its body is read, and its connection closed', async () => {
    const ingest = build(heldPublisher().publisher);
    try {
      const port = await listen(ingest);
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      let answer = '';
      socket.on('data', (d) => (answer += d.toString()));
      const closed = new Promise((r) => socket.once('close', r));
      await new Promise((r) => socket.once('connect', r));
      // Headers announcing a megabyte, and not one byte of it.
      socket.write('POST /v1/event HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n');
      await until(() => answer.includes('\r\n\r\n'), 3_000);
      expect(answer).toMatch(/^HTTP\/1\.1 404 /);
      expect(answer).toContain('INGEST_NOT_FOUND');
      await closed;
      expect(ingest.budget.inUse).toBe(0);
    } finally {
      await ingest.app.close();
    }
  });
});
