import { injectInTurn, runChaos } from './run';
import type { FaultContext } from './scenarios';

/** Just enough of a fault context for the bookkeeping under test (no stack, no broker). */
function context(): FaultContext {
  const faults: string[] = [];
  return { fault: (line: string) => faults.push(line), faultCount: () => faults.length, problems: [] as string[] } as unknown as FaultContext;
}

describe('a chaos run that would test nothing', () => {
  it('counts a scenario that injected no fault (the load ended first) as a problem, not a pass', async () => {
    const ctx = context();
    await injectInTurn(
      [
        { name: 'kill', inject: async (c) => c.fault('SIGKILL validate') },
        { name: 'broker', inject: async () => undefined /* its pause found the load over */ },
      ],
      ctx,
    );
    expect(ctx.problems).toEqual(['scenario broker injected no fault (the load ended before its turn; give it more --seconds)']);
  });

  it.each([
    ['seconds NaN (a typo like 60s)', { seconds: Number('60s') }],
    ['zero seconds', { seconds: 0 }],
    ['zero rate', { rate: 0 }],
    ['a drain timeout that is not a number', { drainTimeoutMs: Number('x') * 1000 }],
  ])('refuses %s before starting anything', async (_label, bad) => {
    await expect(runChaos({ scenarios: ['kill'], seconds: 60, rate: 500, seed: 1, workDir: '/nonexistent/chaos-test', ...bad })).rejects.toThrow(/must be a positive number/);
  });
});
