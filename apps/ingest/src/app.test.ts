import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { order } from '../test/support';
import { buildApp, type IngestApp } from './app';
import type { EventPublisher } from './delivery/publisher';

// The in-flight budget bounds the request bytes ingest holds. A reservation used to be released
// when the response closed, which a client going away does at once, while the handler still held
// the body waiting on Kafka: a client that timed out and retried was reserved twice, the first
// body still in memory.
describe('the in-flight budget', () => {
  let ingest: IngestApp | undefined;
  afterEach(async () => {
    await ingest?.app.close();
    ingest = undefined;
  });

  it('stays reserved while a handler still holds the body of a request whose client went away', async () => {
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
    ingest = buildApp({
      publisher,
      apiKeys: [{ producer: 'p', key: 'k-0123456789abcdefghijklmnopqrstuv', contracts: ['*'] }],
      rawTopic: 'raw',
      limits: { maxBodyBytes: 1 << 20, maxBatchEvents: 100, maxEventBytes: 1 << 16, maxDepth: 32, maxFutureSkewMs: 300_000, maxEventAgeMs: 7 * 86_400_000, maxInFlightBytes: 1 << 20 },
      retryAfterSeconds: 1,
    });
    await ingest.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = ingest.app.server.address() as AddressInfo;
    const body = JSON.stringify(order());
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/events', method: 'POST', headers: { authorization: 'Bearer k-0123456789abcdefghijklmnopqrstuv', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => undefined); // the client aborts below
    req.end(body);
    await started;
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body));

    req.destroy(); // the client gives up while Kafka has not answered
    await new Promise((r) => setTimeout(r, 100));
    expect(ingest.budget.inUse).toBe(Buffer.byteLength(body));

    deliver();
    const until = Date.now() + 5_000;
    while (ingest.budget.inUse > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    expect(ingest.budget.inUse).toBe(0);
  });
});
