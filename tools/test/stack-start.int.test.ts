import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Stack } from '../src/bench/stack';
import { testBrokers } from './support/env';

// A service that cannot start under the stack's supervisor: the wait for it fails saying why it
// kept exiting (its last line), not only that it timed out.
describe('the stack starting a service that keeps exiting', () => {
  const workDir = mkdtempSync(path.join(process.env.SLUICE_TEST_DIR ?? tmpdir(), 'sluice-stack-start-'));
  const stack = new Stack({
    brokers: testBrokers(),
    workDir,
    prefix: 'stack-start.',
    env: { 'query-api': { QUERY_API_MAX_ROWS: '0' } },
  });

  afterAll(async () => {
    await stack.close();
    rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  it('fails naming the exits and the last line the service printed', async () => {
    const failure = await stack.start('query-api', 0, 15_000).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(failure).toMatch(/^timed out after 15000 ms waiting for query-api ready \(it exited [1-9]\d* time\(s\) meanwhile, the last code 1, last line: .*QUERY_API_MAX_ROWS must be ≥ 1/);
    expect(stack.get('query-api').restarts).toBeGreaterThan(0);
  }, 120_000);
});
