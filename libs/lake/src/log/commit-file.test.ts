import { parseCommit, serializeCommit } from './commit-file';

const key = '_delta_log/00000000000000000003.json';

describe('commit files', () => {
  it('parses actions, ignores unknown ones and keeps commitInfo', () => {
    const text = [
      '{"commitInfo":{"operation":"WRITE","isBlindAppend":true}}',
      '{"txn":{"appId":"p-0","version":12345678901234567890}}',
      '{"add":{"path":"a.parquet","size":10,"modificationTime":1,"dataChange":true}}',
      '{"remove":{"path":"b.parquet","dataChange":true}}',
      '{"cdc":{"path":"x"}}',
      '',
    ].join('\n');
    const c = parseCommit(3, key, Buffer.from(text));
    expect(c.commitInfo).toMatchObject({ operation: 'WRITE' });
    expect(c.txns[0].version).toBe(12345678901234567890n);
    expect(c.adds[0].partitionValues).toEqual({});
    expect(c.removes[0].path).toBe('b.parquet');
  });

  it('names the file and line of a torn commit', () => {
    expect(() => parseCommit(3, key, Buffer.from('{"commitInfo":{}}\n{"add":{"pa'))).toThrow(
      expect.objectContaining({ code: 'LAKE_LOG_CORRUPT', message: expect.stringContaining(`${key} line 2`) }),
    );
    expect(() => parseCommit(3, key, Buffer.from('\n\n'))).toThrow(expect.objectContaining({ code: 'LAKE_LOG_CORRUPT' }));
    expect(() => parseCommit(3, key, Buffer.from('{"add":{"size":1}}\n'))).toThrow(expect.objectContaining({ code: 'LAKE_LOG_CORRUPT' }));
  });

  it('serialises commitInfo first, one action per line, stats as a string', () => {
    const body = Buffer.from(
      serializeCommit([{ add: { path: 'a', partitionValues: {}, size: 1, modificationTime: 1, dataChange: true, stats: '{"numRecords":1}' } }, { commitInfo: { operation: 'WRITE' } }]),
    ).toString();
    const lines = body.trimEnd().split('\n');
    expect(lines[0]).toBe('{"commitInfo":{"operation":"WRITE"}}');
    expect(JSON.parse(lines[1]).add.stats).toBe('{"numRecords":1}');
    expect(body.endsWith('\n')).toBe(true);
  });
});
