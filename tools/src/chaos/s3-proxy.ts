import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy does to each request now. */
export interface S3Faults {
  /** Added before a request is forwarded, ms. */
  readonly delayMs: number;
  /** Share of requests answered `503 SlowDown` by the proxy itself (0–1), never forwarded. */
  readonly failRatio: number;
  /**
   * Share of requests forwarded, carried out by the server, and then answered `503 SlowDown`
   * anyway (0–1): the answer is lost, the effect is not — a client must not take its own write
   * for a rival's when it retries.
   */
  readonly loseRatio: number;
  /**
   * The next this many Delta commits that land (a PUT of `_delta_log/<version>.json` the server
   * carries out) lose their answer whatever `loseRatio` draws: the case the lost-answer fault is
   * for, made certain instead of left to the draw (a write's earlier requests take most of the
   * draws, so under 30 % loss a 20 s window could pass with no commit's answer lost).
   */
  readonly loseCommits: number;
}

const NONE: S3Faults = { delayMs: 0, failRatio: 0, loseRatio: 0, loseCommits: 0 };

const SLOW_DOWN = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate (injected by the chaos S3 proxy).</Message></Error>';

/** The path of a Delta commit file: `…/_delta_log/<20 digits>.json`. */
const COMMIT_PATH = /\/_delta_log\/\d{20}\.json(?:\?|$)/;

/**
 * An HTTP proxy in front of an S3-compatible server, for storage faults the services cannot tell
 * from a real object store's: added latency, requests refused with S3's throttling answer
 * (`503 SlowDown`, which the AWS SDK retries and then reports), and requests carried out whose
 * answer is lost. Requests pass unchanged, Host header included, so SigV4 signatures made for the
 * proxy's address still verify upstream. Listens on 127.0.0.1 only.
 */
export class FaultyS3Proxy {
  /** Requests seen, delayed, refused, and carried out with their answer replaced, since the start. */
  readonly stats = { requests: 0, delayed: 0, failed: 0, lost: 0, lostCommits: 0, commits: 0 };
  private faults: S3Faults = NONE;
  /** Landed commits still to lose their answer (`S3Faults.loseCommits`, counted down). */
  private commitLossesLeft = 0;
  /** Its own agent, so `close()` can end every upstream connection. */
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: http.Server,
    private readonly random: () => number,
  ) {}

  /** Starts a proxy to `target` (`http://host:port`) on a free loopback port. `random` decides which requests fail. */
  static async start(target: string, random: () => number = Math.random): Promise<FaultyS3Proxy> {
    const upstream = new URL(target);
    if (upstream.protocol !== 'http:') throw new Error(`the S3 fault proxy forwards to http:// only, not ${target}`);
    const server = http.createServer();
    const proxy = new FaultyS3Proxy(server, random);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => proxy.handle(upstream, req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  /** The endpoint clients use instead of the server's. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Sets the faults for requests from now on (unset fields: none). */
  set(faults: Partial<S3Faults>): void {
    this.faults = { ...NONE, ...faults };
    this.commitLossesLeft = this.faults.loseCommits;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.agent.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(upstream: URL, req: http.IncomingMessage, res: http.ServerResponse): void {
    this.stats.requests += 1;
    const { delayMs, failRatio, loseRatio } = this.faults;
    if (failRatio > 0 && this.random() < failRatio) {
      this.stats.failed += 1;
      req.resume();
      slowDown(res);
      return;
    }
    const commit = req.method === 'PUT' && COMMIT_PATH.test(req.url ?? '');
    if (commit) this.stats.commits += 1;
    const drawn = loseRatio > 0 && this.random() < loseRatio;
    const forward = () => {
      const out = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent: this.agent },
        (answer) => {
          const landed = commit && (answer.statusCode ?? 0) < 300;
          const forced = landed && this.commitLossesLeft > 0;
          if (forced) this.commitLossesLeft -= 1;
          if (drawn || forced) {
            this.stats.lost += 1;
            // A Delta commit (a put-if-absent of the next log file) that landed while its writer
            // was told it failed: the case this fault exists for.
            if (landed) this.stats.lostCommits += 1;
            answer.resume();
            answer.on('end', () => slowDown(res));
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', (err) => {
        // Mid-answer, the client must see a broken response, not text appended to its body.
        if (res.headersSent) return res.destroy(err);
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`chaos S3 proxy: upstream failed: ${err.message}`);
      });
      // A client that hung up takes its upstream request with it.
      res.on('close', () => {
        if (!res.writableFinished) out.destroy();
      });
      req.pipe(out);
    };
    if (delayMs > 0) {
      this.stats.delayed += 1;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        forward();
      }, delayMs);
      this.timers.add(timer);
    } else {
      forward();
    }
  }
}

/** S3's throttling answer. */
function slowDown(res: http.ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(SLOW_DOWN) });
  res.end(SLOW_DOWN);
}
