import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { createTelemetry } from './telemetry';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _e, done) {
      raw.push(String(chunk));
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, raw, stream };
}

describe('logger', () => {
  it('redacts credentials at any of the usual places', () => {
    const out = capture();
    const log = createLogger({ service: 'ingest', destination: out.stream });
    log.info(
      {
        password: 'pw-top',
        req: { headers: { authorization: 'Bearer tok-1', 'x-api-key': 'key-1', host: 'h' } },
        headers: { Authorization: 'Basic x', authorization: 'Basic tok-2' },
        config: { s3: { secretAccessKey: 'sk-1', accessKeyId: 'AKIA' }, apiKey: 'key-2', kafka: { sasl: { password: 'pw-2' } } },
        db: { password: 'pw-3' },
        token: 'tok-3',
      },
      'start',
    );
    const text = out.raw.join('');
    for (const secret of ['pw-top', 'tok-1', 'key-1', 'tok-2', 'sk-1', 'key-2', 'pw-2', 'pw-3', 'tok-3']) {
      expect(text).not.toContain(secret);
    }
    const line = out.lines[0] as { req: { headers: Record<string, string> }; config: { s3: Record<string, string> } };
    expect(line.req.headers.authorization).toBe('[REDACTED]');
    expect(line.req.headers.host).toBe('h');
    expect(line.config.s3.accessKeyId).toBe('AKIA');
    expect(out.lines[0]).toMatchObject({ level: 'info', service: 'ingest', msg: 'start' });
  });

  it('carries the active trace and span ids', () => {
    const out = capture();
    const t = createTelemetry({ service: 'validate', logDestination: out.stream, traces: { kind: 'memory' } });
    const ids = t.withSpan('work', (span) => {
      t.logger.info('inside');
      return span;
    });
    t.logger.info('outside');
    expect(out.lines[0]).toMatchObject({ msg: 'inside', trace_id: ids.traceId, span_id: ids.spanId });
    expect(out.lines[1].trace_id).toBeUndefined();
    return t.shutdown();
  });
});
