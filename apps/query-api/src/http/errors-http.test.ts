import type { FastifyReply, FastifyRequest } from 'fastify';
import { queryError } from '../errors';
import { errorHandler } from './errors-http';

/** What the handler did with one error: the warnings it logged and the answer it sent. */
function handle(err: unknown) {
  const warnings: unknown[][] = [];
  const sent: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
  const request = { log: { warn: (...args: unknown[]) => warnings.push(args) } } as unknown as FastifyRequest;
  const reply = {
    header(name: string, value: string) {
      sent.headers[name] = value;
      return this;
    },
    status(code: number) {
      sent.status = code;
      return this;
    },
    send(body: unknown) {
      sent.body = body;
      return this;
    },
  } as unknown as FastifyReply;
  errorHandler(err, request, reply);
  return { warnings, ...sent };
}

describe('errorHandler', () => {
  it("does not log the limiter's routine refusals, but answers them 503 with Retry-After", () => {
    const out = handle(queryError('QUERY_SATURATED', '4 running and 64 waiting', { retryAfterSeconds: 1 }));
    expect(out).toMatchObject({ status: 503, headers: { 'retry-after': '1' }, body: { error: { code: 'QUERY_SATURATED', retryable: true } } });
    expect(out.warnings).toEqual([]);
  });

  it('logs the query engine running out of memory (QUERY_SATURATED with the lake error as cause)', () => {
    const cause = Object.assign(new Error('query: Out of Memory Error: could not allocate block'), { code: 'LAKE_OUT_OF_MEMORY' });
    const out = handle(queryError('QUERY_SATURATED', 'the query engine ran out of memory', { retryAfterSeconds: 1 }, cause));
    expect(out).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
    expect(out.warnings).toHaveLength(1);
    expect(out.warnings[0][0]).toMatchObject({ code: 'QUERY_SATURATED', err: { cause } });
    // The cause stays in the log: the answer carries no internal detail beyond the message.
    expect((out.body as { error: { details?: unknown } }).error.details).toBeUndefined();
  });

  it('logs other server errors and not client errors', () => {
    expect(handle(new Error('bug')).warnings).toHaveLength(1);
    expect(handle(new Error('bug')).status).toBe(500);
    expect(handle(queryError('QUERY_INVALID', 'bad filter')).warnings).toEqual([]);
  });
});
