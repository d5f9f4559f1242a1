import type { RawMessage } from '../routing/route';
import type { CheckOutcome } from '../routing/worker-checks';
import { ChecksAhead } from './checks-ahead';

const message = (offset: number): RawMessage => ({ topic: 'raw', partition: 0, offset, key: null, value: Buffer.from(`v${offset}`), headers: {} });

/** A check recording what it was asked; each outcome names the value it checked. */
function recorder(fail?: (messages: readonly RawMessage[]) => boolean) {
  const asked: number[][] = [];
  const check = async (messages: readonly RawMessage[]): Promise<CheckOutcome[]> => {
    asked.push(messages.map((m) => m.offset));
    await new Promise((r) => setTimeout(r, 5));
    if (fail?.(messages)) throw new Error('registry down');
    return messages.map((m) => ({ ok: true, contract: 'orders', key: String(m.offset), topic: 't', value: m.value as Buffer }));
  };
  return { asked, check };
}

const keys = (outcomes: CheckOutcome[]) => outcomes.map((o) => (o && 'ok' in o && o.ok ? o.key : o));

describe('ChecksAhead', () => {
  it('uses what it checked ahead for the same message objects and checks the rest when asked', async () => {
    const r = recorder();
    const ahead = new ChecksAhead(r.check);
    const fetched = [message(3), message(4), message(5)];
    ahead.prepare(fetched);
    // The batch: one message carried from before, two fetched ahead, one fetched since, and a
    // copy of a prepared offset that is another object (read again after a rewind).
    const batch = [message(2), fetched[0], fetched[1], message(5), message(6)];
    expect(keys(await ahead.outcomes(batch))).toEqual(['2', '3', '4', '5', '6']);
    expect(r.asked).toEqual([[3, 4, 5], [2, 5, 6]]);
    // Forgotten once a batch was served: the next batch checks all of its records.
    expect(keys(await ahead.outcomes([fetched[2]]))).toEqual(['5']);
    expect(r.asked[2]).toEqual([5]);
  });

  it('drops a check ahead that failed: the batch checks those records itself and meets the failure there', async () => {
    let down = true;
    const r = recorder(() => down);
    const ahead = new ChecksAhead(r.check);
    const fetched = [message(1), message(2)];
    ahead.prepare(fetched);
    await expect(ahead.outcomes(fetched)).rejects.toThrow('registry down');
    down = false;
    ahead.prepare(fetched);
    expect(keys(await ahead.outcomes(fetched))).toEqual(['1', '2']);
    expect(r.asked).toEqual([[1, 2], [1, 2], [1, 2]]);
  });

  // Slices fetched ahead are checked as they come (the worker queues them); the batch waits for
  // every one, whichever answers last.
  it('uses every slice checked ahead, the batch waiting for the slowest', async () => {
    const answered: number[] = [];
    const ahead = new ChecksAhead(async (messages) => {
      await new Promise((r) => setTimeout(r, messages[0].offset === 1 ? 40 : 5));
      answered.push(messages[0].offset);
      return messages.map((m) => ({ ok: true, contract: 'orders', key: String(m.offset), topic: 't', value: m.value as Buffer }));
    });
    const first = [message(1)];
    const second = [message(2)];
    ahead.prepare(first);
    ahead.prepare(second);
    expect(keys(await ahead.outcomes([...first, ...second]))).toEqual(['1', '2']);
    // Both were prepared (the batch asked for nothing more), the second answering first.
    expect(answered).toEqual([2, 1]);
  });
});
