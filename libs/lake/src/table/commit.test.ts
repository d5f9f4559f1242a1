import { SluiceError } from '@sluice/errors';
import { commitKey } from '../log/actions';
import type { Storage } from '../storage/storage';
import { commit, type CommitPlan } from './commit';

/** A log in memory whose put fails as configured: the server may still store the entry later. */
function flakyLog(fail: { retryable: boolean; code?: string; landsAfterMs?: number }) {
  const objects = new Map<string, Uint8Array>();
  let puts = 0;
  const storage = {
    uri: 'mem://t',
    putIfAbsent: async (key: string, body: Uint8Array) => {
      puts += 1;
      if (puts === 1) {
        // The answer is lost; the server completes the write a little later (or never).
        if (fail.landsAfterMs !== undefined) setTimeout(() => objects.set(key, body), fail.landsAfterMs);
        throw new SluiceError(fail.code ?? 'LAKE_STORAGE_UNAVAILABLE', 'socket timeout', { retryable: fail.retryable });
      }
      if (objects.has(key)) return false;
      objects.set(key, body);
      return true;
    },
    getIfExists: async (key: string) => objects.get(key),
    get: async (key: string) => objects.get(key) as Uint8Array,
  } as unknown as Storage;
  return { storage, objects };
}

const plan: CommitPlan = { operation: 'WRITE', actions: [{ txn: { appId: 'a', version: 1 } }], isBlindAppend: true };

describe('commit after a put whose answer was lost', () => {
  // One look right after the error found nothing when the server completed the write a moment
  // later: the caller retried and committed the same actions again at the next version.
  it('finds its own entry when the write lands shortly after the error, and reports it committed', async () => {
    const { storage, objects } = flakyLog({ retryable: true, landsAfterMs: 100 });
    const result = await commit(storage, 't', 4, [], plan, 3);
    expect(result.version).toBe(5);
    expect([...objects.keys()]).toEqual([commitKey(5)]);
  });

  // An answer that could not be read (not retryable) was thrown without looking at all.
  it('looks for the entry after an answer it could not read', async () => {
    const { storage } = flakyLog({ retryable: false, code: 'LAKE_STORAGE_FAILED', landsAfterMs: 0 });
    await expect(commit(storage, 't', 4, [], plan, 3)).resolves.toMatchObject({ version: 5 });
  });

  it('does not look after a definite refusal (access denied): the error stands at once', async () => {
    const { storage } = flakyLog({ retryable: false, code: 'LAKE_STORAGE_ACCESS_DENIED', landsAfterMs: 0 });
    await expect(commit(storage, 't', 4, [], plan, 3)).rejects.toMatchObject({ code: 'LAKE_STORAGE_ACCESS_DENIED' });
  });

  it('throws the put error when the entry never appears', async () => {
    const { storage, objects } = flakyLog({ retryable: true });
    await expect(commit(storage, 't', 4, [], plan, 3)).rejects.toMatchObject({ code: 'LAKE_STORAGE_UNAVAILABLE' });
    expect(objects.size).toBe(0);
  });
});
