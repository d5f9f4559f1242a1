import { warningsOf } from './run';

describe('warningsOf', () => {
  it('groups a service log\'s warn, error and fatal lines by message and code, skipping info and non-JSON lines', () => {
    const log = [
      '{"level":"info","time":"2026-11-29T20:56:54.550Z","msg":"validate running"}',
      '{"level":"warn","time":"2026-11-29T20:57:03.780Z","reason":"KAFKA_TIMEOUT","msg":"Kafka availability changed"}',
      'not json: a stack trace line',
      '{"level":"warn","time":"2026-11-29T20:57:25.014Z","msg":"Kafka availability changed"}',
      '{"level":"fatal","time":"2026-11-29T20:57:45.252Z","err":{"code":"KAFKA_FATAL"},"msg":"validate stopped on a non-retryable error"}',
    ].join('\n');
    expect(warningsOf('validate', log)).toEqual([
      'validate: 2× Kafka availability changed (first at 20:57:03.780)',
      'validate: 1× validate stopped on a non-retryable error [KAFKA_FATAL] (first at 20:57:45.252)',
    ]);
    expect(warningsOf('ingest', '')).toEqual([]);
  });
});
