import { loadConfig } from '@sluice/config';
import { telemetryConfigFields, telemetryOptionsFromConfig } from './config';

describe('telemetry config', () => {
  it('defaults to no span export, info logs and a loopback ops server', () => {
    const cfg = loadConfig(telemetryConfigFields, {});
    expect(cfg).toEqual({ logLevel: 'info', tracesExporter: 'none', tracesFile: '-', tracesSampleRatio: '1', opsHost: '127.0.0.1', opsPort: 9464 });
    expect(telemetryOptionsFromConfig(cfg)).toEqual({ logLevel: 'info', traces: { kind: 'none' }, traceSampleRatio: 1 });
  });

  it('selects the JSON-lines exporter and requires its file', () => {
    const cfg = loadConfig(telemetryConfigFields, { TRACES_EXPORTER: 'jsonl', TRACES_FILE: '/tmp/spans.jsonl', TRACES_SAMPLE_RATIO: '0.25' });
    expect(telemetryOptionsFromConfig(cfg)).toEqual({ logLevel: 'info', traces: { kind: 'jsonl', path: '/tmp/spans.jsonl' }, traceSampleRatio: 0.25 });
    const noFile = loadConfig(telemetryConfigFields, { TRACES_EXPORTER: 'jsonl' });
    expect(() => telemetryOptionsFromConfig(noFile)).toThrow(/TRACES_FILE is required/);
  });

  it('reports bad values together', () => {
    expect(() => loadConfig(telemetryConfigFields, { TRACES_EXPORTER: 'otlp', TRACES_SAMPLE_RATIO: '1.5', LOG_LEVEL: 'loud' })).toThrow(
      /LOG_LEVEL[\s\S]*TRACES_EXPORTER[\s\S]*TRACES_SAMPLE_RATIO/,
    );
  });

  it('does not offer the in-memory span exporter through the environment (it keeps every span for ever)', () => {
    expect(() => loadConfig(telemetryConfigFields, { TRACES_EXPORTER: 'memory' })).toThrow(/TRACES_EXPORTER/);
  });
});

