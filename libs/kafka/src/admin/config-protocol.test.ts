// Hostile peers for the two wire requests: whatever comes back (or doesn't), the caller gets a
// typed KafkaError, never a RangeError or a hang. Real-broker behaviour is covered by
// test/admin.int.test.ts; these servers only play broken brokers.
import net from 'node:net';
import { SluiceError } from '@sluice/errors';
import { alterTopicConfigs, describeTopicConfigs } from './config-protocol';

type Behaviour = (socket: net.Socket, request: Buffer) => void;

async function withServer(behaviour: Behaviour, run: (broker: string) => Promise<void>): Promise<void> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', (request) => behaviour(socket, request));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  try {
    await run(`127.0.0.1:${port}`);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

function frame(correlationId: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeInt32BE(4 + body.length, 0);
  head.writeInt32BE(correlationId, 4);
  return Buffer.concat([head, body]);
}

const opts = (broker: string) => ({ brokers: [broker], clientId: 'test', timeoutMs: 500 });

describe('config wire protocol against hostile peers', () => {
  it('sends a well-formed DescribeConfigs v1 request', async () => {
    let seen: Buffer | undefined;
    await withServer(
      (socket, request) => {
        seen = request;
        socket.destroy();
      },
      async (broker) => {
        await describeTopicConfigs(opts(broker), ['orders']).catch(() => undefined);
      },
    );
    const req = seen as Buffer;
    expect(req.readInt32BE(0)).toBe(req.length - 4); // size prefix
    expect(req.readInt16BE(4)).toBe(32); // api key DescribeConfigs
    expect(req.readInt16BE(6)).toBe(1); // version
    expect(req.readInt16BE(12)).toBe(4); // client id length
    expect(req.toString('utf8', 14, 18)).toBe('test');
    expect(req.readInt32BE(18)).toBe(1); // one resource
    expect(req.readInt8(22)).toBe(2); // TOPIC
    expect(req.readInt16BE(23)).toBe(6);
    expect(req.toString('utf8', 25, 31)).toBe('orders');
    expect(req.readInt32BE(31)).toBe(-1); // all keys
  });

  it('turns a truncated response into KAFKA_UNKNOWN (malformed), not a RangeError', async () => {
    await withServer(
      (socket) => socket.end(frame(1, Buffer.from([0, 0, 0, 0, 0, 0, 0, 1, 0]))),
      async (broker) => {
        const err = await describeTopicConfigs(opts(broker), ['x']).catch((e) => e);
        expect(err).toBeInstanceOf(SluiceError);
        expect(err).toMatchObject({ code: 'KAFKA_UNKNOWN', message: expect.stringContaining('malformed') });
      },
    );
  });

  it('rejects an implausible response size as an unreachable broker', async () => {
    await withServer(
      (socket) => socket.write(Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1])),
      async (broker) => {
        await expect(describeTopicConfigs(opts(broker), ['x'])).rejects.toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true });
      },
    );
  });

  it('maps a peer that hangs up or never answers to retryable errors', async () => {
    await withServer(
      (socket) => socket.destroy(),
      async (broker) => {
        await expect(alterTopicConfigs(opts(broker), 'x', { 'retention.ms': '1' })).rejects.toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true });
      },
    );
    await withServer(
      () => undefined,
      async (broker) => {
        const started = Date.now();
        await expect(describeTopicConfigs(opts(broker), ['x'])).rejects.toMatchObject({ retryable: true });
        expect(Date.now() - started).toBeLessThan(5_000);
      },
    );
  });

  it('translates a broker error code in the response (3 = unknown topic)', async () => {
    const name = Buffer.from('gone');
    const body = Buffer.alloc(4 + 4 + 2 + 2 + 1 + 2 + name.length + 4);
    let o = 0;
    o = body.writeInt32BE(0, o); // throttle
    o = body.writeInt32BE(1, o); // one result
    o = body.writeInt16BE(3, o); // UNKNOWN_TOPIC_OR_PARTITION
    o = body.writeInt16BE(-1, o); // null message
    o = body.writeInt8(2, o);
    o = body.writeInt16BE(name.length, o);
    o += name.copy(body, o);
    body.writeInt32BE(0, o); // no configs
    await withServer(
      (socket) => socket.end(frame(1, body)),
      async (broker) => {
        await expect(describeTopicConfigs(opts(broker), ['gone'])).rejects.toMatchObject({ code: 'KAFKA_TOPIC_NOT_FOUND', details: { topic: 'gone' } });
      },
    );
  });
});

/** A peer answering each framed request through `answer` (api key, body after the header) until it returns undefined. */
async function withSaslServer(answer: (apiKey: number, body: Buffer) => Buffer | undefined, run: (broker: string) => Promise<void>): Promise<void> {
  await withServer(
    (socket, first) => {
      let buffered = first;
      const drain = () => {
        while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
          const request = buffered.subarray(4, 4 + buffered.readInt32BE(0));
          buffered = buffered.subarray(4 + request.length);
          const apiKey = request.readInt16BE(0);
          const correlationId = request.readInt32BE(4);
          const bodyAt = 8 + 2 + request.readInt16BE(8);
          const response = answer(apiKey, request.subarray(bodyAt));
          if (response === undefined) return socket.destroy();
          socket.write(frame(correlationId, response));
        }
      };
      socket.on('data', (chunk: Buffer) => {
        buffered = Buffer.concat([buffered, chunk]);
        drain();
      });
      drain();
    },
    run,
  );
}

const string = (s: string) => Buffer.concat([Buffer.from([s.length >> 8, s.length & 0xff]), Buffer.from(s)]);
const int16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const handshakeAnswer = (error: number, mechanisms: string[]) => Buffer.concat([int16(error), int32(mechanisms.length), ...mechanisms.map(string)]);
const authenticateAnswer = (error: number, message: string | null, bytes = Buffer.alloc(0)) =>
  Buffer.concat([int16(error), message === null ? int16(-1) : string(message), int32(bytes.length), bytes, Buffer.alloc(8)]);
const plain = (broker: string) => ({
  ...opts(broker),
  security: { protocol: 'sasl_plaintext' as const, sasl: { mechanism: 'PLAIN' as const, username: 'svc', password: 'pw' } },
});

describe('SASL before the config requests, against scripted peers', () => {
  it('refuses a mechanism the broker does not offer, naming what it offers', async () => {
    await withSaslServer(
      (apiKey) => (apiKey === 17 ? handshakeAnswer(33, ['GSSAPI', 'OAUTHBEARER']) : undefined),
      async (broker) => {
        const err = await describeTopicConfigs(plain(broker), ['x']).catch((e) => e);
        expect(err).toMatchObject({ code: 'KAFKA_AUTHENTICATION_FAILED', retryable: false });
        expect(err.message).toMatch(/does not offer SASL PLAIN \(it offers GSSAPI, OAUTHBEARER\)/);
      },
    );
  });

  it('sends the PLAIN token, and a refused login is KAFKA_AUTHENTICATION_FAILED with the broker reason', async () => {
    const seen: Array<[number, Buffer]> = [];
    await withSaslServer(
      (apiKey, body) => {
        seen.push([apiKey, body]);
        if (apiKey === 17) return handshakeAnswer(0, ['PLAIN']);
        if (apiKey === 36) return authenticateAnswer(58, 'invalid credentials');
        return undefined;
      },
      async (broker) => {
        await expect(describeTopicConfigs(plain(broker), ['x'])).rejects.toMatchObject({
          code: 'KAFKA_AUTHENTICATION_FAILED',
          message: expect.stringContaining('invalid credentials'),
        });
      },
    );
    expect(seen.map(([k]) => k)).toEqual([17, 36]);
    expect(seen[0][1].toString('utf8', 2)).toBe('PLAIN');
    const token = seen[1][1];
    expect(token.readInt32BE(0)).toBe(token.length - 4);
    expect(token.subarray(4).toString('utf8')).toBe('\0svc\0pw');
  });

  it('sends the config request on the authenticated connection, with the next correlation id', async () => {
    const keys: number[] = [];
    await withSaslServer(
      (apiKey) => {
        keys.push(apiKey);
        if (apiKey === 17) return handshakeAnswer(0, ['PLAIN']);
        if (apiKey === 36) return authenticateAnswer(0, null);
        // DescribeConfigs: one topic, no error, no entries.
        return Buffer.concat([int32(0), int32(1), int16(0), int16(-1), Buffer.from([2]), string('x'), int32(0)]);
      },
      async (broker) => {
        const configs = await describeTopicConfigs(plain(broker), ['x']);
        expect(configs.get('x')).toEqual({});
      },
    );
    expect(keys).toEqual([17, 36, 32]);
  });

  it('refuses a SCRAM peer whose final message does not prove the password', async () => {
    await withSaslServer(
      (apiKey, body) => {
        if (apiKey === 17) return handshakeAnswer(0, ['SCRAM-SHA-256']);
        if (apiKey !== 36) return undefined;
        const message = body.subarray(4).toString('utf8');
        if (message.startsWith('n,,')) {
          const nonce = /r=([^,]+)/.exec(message)?.[1] ?? '';
          return authenticateAnswer(0, null, Buffer.from(`r=${nonce}server,s=c2FsdA==,i=4096`));
        }
        return authenticateAnswer(0, null, Buffer.from('v=bm90IHRoZSBzaWduYXR1cmUgYXQgYWxsIG5vIG5vIG5v'));
      },
      async (broker) => {
        const security = { protocol: 'sasl_plaintext' as const, sasl: { mechanism: 'SCRAM-SHA-256' as const, username: 'svc', password: 'pw' } };
        await expect(describeTopicConfigs({ ...opts(broker), security }, ['x'])).rejects.toMatchObject({
          code: 'KAFKA_AUTHENTICATION_FAILED',
          message: expect.stringContaining('does not know the password'),
        });
      },
    );
  });
});

describe('TLS failures are told apart from outages', () => {
  const tlsOpts = (broker: string) => ({ ...opts(broker), security: { protocol: 'ssl' as const } });

  it('a peer that hangs up during the handshake is unreachable (retryable), not a refusal', async () => {
    await withServer(
      (socket) => socket.destroy(),
      async (broker) => {
        await expect(describeTopicConfigs(tlsOpts(broker), ['x'])).rejects.toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE', retryable: true });
      },
    );
  });

  it('a peer that does not speak TLS (a plaintext listener) is a TLS failure, not an outage', async () => {
    await withServer(
      (socket) => socket.end(Buffer.alloc(64, 0x41)),
      async (broker) => {
        await expect(describeTopicConfigs(tlsOpts(broker), ['x'])).rejects.toMatchObject({ code: 'KAFKA_AUTHENTICATION_FAILED', retryable: false });
      },
    );
  });

  it('a broker port out of range is an address problem, not a refusal', async () => {
    await expect(describeTopicConfigs(tlsOpts('127.0.0.1:99999'), ['x'])).rejects.toMatchObject({ code: 'KAFKA_BROKER_UNREACHABLE' });
  });
});
