import * as os from 'node:os';
import * as path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { configureSharedDuckDB, duckError, isDuckDBError, sharedDuckDB, sharedDuckDBMemoryBytes, withConnection } from './duck';

/** The error DuckDB itself raises for `sql` on a fresh in-memory instance with `config`. */
async function duckdbFailure(sql: string, config: Record<string, string> = {}): Promise<unknown> {
  const instance = await DuckDBInstance.create(':memory:', config);
  const conn = await instance.connect();
  try {
    await conn.run(sql);
  } catch (err) {
    return err;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
  throw new Error(`expected ${sql} to fail`);
}

describe('duckError', () => {
  it('names DuckDB running out of memory LAKE_OUT_OF_MEMORY (retryable), whatever the step would have called it', async () => {
    const oom = await duckdbFailure('SELECT length(list(md5(range::VARCHAR))) FROM range(2000000)', { memory_limit: '16MB', threads: '1' });
    // A write used to call this "rows do not fit the table schema" (LAKE_INVALID_INPUT, not retryable).
    const asWrite = duckError('loading rows', oom, 'LAKE_INVALID_INPUT');
    expect(asWrite).toMatchObject({ code: 'LAKE_OUT_OF_MEMORY', retryable: true });
    expect(asWrite.message).toMatch(/^loading rows: Out of Memory Error/);
    expect(duckError('query', oom)).toMatchObject({ code: 'LAKE_OUT_OF_MEMORY', retryable: true });
  });

  it("keeps the step's own code for every other DuckDB error", async () => {
    const conversion = await duckdbFailure(`SELECT CAST('x' AS INTEGER)`);
    expect(duckError('loading rows', conversion, 'LAKE_INVALID_INPUT')).toMatchObject({ code: 'LAKE_INVALID_INPUT', retryable: false });
    const binder = await duckdbFailure('SELECT nope');
    expect(duckError('query', binder)).toMatchObject({ code: 'LAKE_QUERY_FAILED', retryable: false });
  });
});

describe('sharedDuckDB', () => {
  it('runs without the external file cache, which kept every file a writer read in memory', async () => {
    const conn = await (await sharedDuckDB()).connect();
    try {
      const rows = (await conn.runAndReadAll(`SELECT current_setting('enable_external_file_cache')`)).getRows();
      expect(rows).toEqual([[false]]);
    } finally {
      conn.closeSync();
    }
  });
});

describe('sharedDuckDBMemoryBytes', () => {
  it('reports what the shared instance holds: more while a table lives in it, less once it is dropped', async () => {
    const idle = await sharedDuckDBMemoryBytes();
    await withConnection((conn) => conn.run('CREATE TABLE memory_probe AS SELECT range AS n, md5(range::VARCHAR) AS s FROM range(500000)'));
    const holding = await sharedDuckDBMemoryBytes();
    await withConnection((conn) => conn.run('DROP TABLE memory_probe'));
    expect(holding - idle).toBeGreaterThan(10 * 1024 * 1024);
    expect(await sharedDuckDBMemoryBytes()).toBeLessThan(holding);
  });
});

describe('withConnection', () => {
  it('turns a DuckDB error the callback did not translate into a lake error, and leaves every other error alone', async () => {
    await expect(withConnection((conn) => conn.run('SELECT nope'))).rejects.toMatchObject({ code: 'LAKE_QUERY_FAILED', message: expect.stringMatching(/^DuckDB statement: Binder Error/) });
    const own = Object.assign(new Error('Disk Error: not DuckDB'), { code: 'EIO' });
    await expect(withConnection(async () => Promise.reject(own))).rejects.toBe(own);
    const bug = new TypeError('Cannot read properties of undefined');
    await expect(withConnection(async () => Promise.reject(bug))).rejects.toBe(bug);
  });

  it('recognises DuckDB errors by their shape, not by their class', async () => {
    expect(isDuckDBError(await duckdbFailure('SELECT nope'))).toBe(true);
    expect(isDuckDBError(new Error('Conversion Error: x'))).toBe(true);
    expect(isDuckDBError(Object.assign(new Error('IO Error: x'), { code: 'LAKE_STORAGE_UNAVAILABLE' }))).toBe(false);
    expect(isDuckDBError(new Error('something went wrong'))).toBe(false);
    expect(isDuckDBError(null)).toBe(false);
  });
});

describe('configureSharedDuckDB', () => {
  it('bounds the shared instance: memory, threads, where it spills and how much', async () => {
    const spill = path.join(os.tmpdir(), `lake-spill-${process.pid}`);
    await configureSharedDuckDB({ memoryLimitMb: 300, threads: 1, tempDirectory: spill, maxSpillMb: 123 });
    const settings = await withConnection(async (conn) =>
      (await conn.runAndReadAll("SELECT current_setting('threads')::VARCHAR AS threads, current_setting('temp_directory') AS dir, current_setting('max_temp_directory_size') AS spill, current_setting('memory_limit') AS memory")).getRowObjects()[0],
    );
    expect(settings).toMatchObject({ threads: '1', dir: spill });
    // DuckDB prints sizes in MiB: 300 MB is 286.1 MiB.
    expect(settings).toMatchObject({ spill: '123.0 MiB', memory: '286.1 MiB' });
  });
});
