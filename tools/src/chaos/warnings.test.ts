import { warningsOf } from './run';

describe('warningsOf', () => {
  it('groups a service log\'s warn, error and fatal lines and its consumer-group events by message and code, skipping other info and non-JSON lines', () => {
    const log = [
      '{"level":"info","time":"2026-11-29T20:56:54.550Z","msg":"validate running"}',
      '{"level":"info","time":"2026-11-29T20:56:54.700Z","partitions":[],"msg":"partitions assigned"}',
      '{"level":"warn","time":"2026-11-29T20:57:03.780Z","reason":"KAFKA_TIMEOUT","msg":"Kafka availability changed"}',
      'not json: a stack trace line',
      '{"level":"warn","time":"2026-11-29T20:57:25.014Z","msg":"Kafka availability changed"}',
      '{"level":"info","time":"2026-11-29T20:57:30.100Z","partitions":[],"msg":"partitions assigned"}',
      '{"level":"fatal","time":"2026-11-29T20:57:45.252Z","err":{"code":"KAFKA_FATAL"},"msg":"validate stopped on a non-retryable error"}',
    ].join('\n');
    expect(warningsOf('validate', log)).toEqual([
      'validate: 2× partitions assigned (first at 20:56:54.700, last at 20:57:30.100)',
      'validate: 2× Kafka availability changed (first at 20:57:03.780, last at 20:57:25.014)',
      'validate: 1× validate stopped on a non-retryable error [KAFKA_FATAL] (first at 20:57:45.252)',
    ]);
    expect(warningsOf('ingest', '')).toEqual([]);
  });
});
