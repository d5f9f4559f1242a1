import { HEADERS } from '@sluice/contracts';
import { Counts, DLQ_HEADERS, describe as describeDlq, matches, ReplayOnce, toReplayRecord, type DlqMessage } from './dlq-record';

function message(partition: number, offset: number, reason: string, contract: string, value = `{"event_id":"e-${offset}"}`): DlqMessage {
  return {
    partition,
    offset,
    key: Buffer.from('k'),
    value: Buffer.from(value),
    headers: {
      'sluice-producer': Buffer.from('shop'),
      traceparent: Buffer.from('00-abc-def-01'),
      [DLQ_HEADERS.reason]: Buffer.from(reason),
      [DLQ_HEADERS.contract]: Buffer.from(contract),
      [DLQ_HEADERS.detail]: Buffer.from(JSON.stringify([{ code: reason, path: '/x', message: 'bad' }])),
      [DLQ_HEADERS.time]: Buffer.from(`2026-11-29T10:00:0${offset}.000Z`),
      [DLQ_HEADERS.sourcePartition]: Buffer.from('3'),
      [DLQ_HEADERS.sourceOffset]: Buffer.from('42'),
    },
  };
}

describe('DLQ records', () => {
  it('pins the header names validate writes', () => {
    expect(Object.values(DLQ_HEADERS).sort()).toEqual([
      'sluice-dlq-contract', 'sluice-dlq-detail', 'sluice-dlq-producer', 'sluice-dlq-reason',
      'sluice-dlq-source-offset', 'sluice-dlq-source-partition', 'sluice-dlq-source-topic', 'sluice-dlq-time', 'sluice-dlq-truncated',
    ]);
  });

  it('reads the header names from the contracts HEADERS (was a local copy of validate\'s names)', () => {
    const contractDlqNames = Object.entries(HEADERS).filter(([key]) => key.startsWith('dlq')).map(([, name]) => name);
    expect(Object.values(DLQ_HEADERS).sort()).toEqual(contractDlqNames.sort());
  });

  it('decodes metadata, event_id and detail; tolerates missing headers and non-JSON values', () => {
    const e = describeDlq(message(1, 5, 'RULE_RANGE', 'orders'));
    expect(e).toMatchObject({ reason: 'RULE_RANGE', contract: 'orders', eventId: 'e-5', source: { partition: 3, offset: 42, topic: 'unknown' } });
    expect(e.detail).toEqual([{ code: 'RULE_RANGE', path: '/x', message: 'bad' }]);
    expect(e.truncated).toBeUndefined();
    const bare = describeDlq({ partition: 0, offset: 1, key: null, value: Buffer.from([0, 1, 2]), headers: {} });
    expect(bare).toMatchObject({ reason: 'unknown', contract: 'unknown', eventId: undefined });
    const cut = message(0, 9, 'EVENT_TOO_LARGE', 'unknown');
    cut.headers['sluice-dlq-truncated'] = Buffer.from('{"valueBytes":1040000,"keyBytes":3,"droppedHeaders":0}');
    expect(describeDlq(cut).truncated).toEqual({ valueBytes: 1_040_000, keyBytes: 3, droppedHeaders: 0 });
  });

  it('filters by reason, contract, position and time, and counts', () => {
    const entries = [message(0, 1, 'RULE_RANGE', 'orders'), message(0, 2, 'RULE_RANGE', 'orders'), message(1, 3, 'EVENT_NOT_JSON', 'inventory')].map(describeDlq);
    expect(entries.filter((e) => matches(e, { reasons: ['RULE_RANGE'] })).length).toBe(2);
    expect(entries.filter((e) => matches(e, { contracts: ['inventory'] })).map((e) => e.offset)).toEqual([3]);
    expect(entries.filter((e) => matches(e, { positions: ['0:2', '1:3'] })).map((e) => e.offset)).toEqual([2, 3]);
    expect(entries.filter((e) => matches(e, { sinceMs: Date.parse('2026-11-29T10:00:02.000Z') })).map((e) => e.offset)).toEqual([2, 3]);
    const counts = new Counts();
    for (const e of entries) counts.add(e);
    expect(counts.total).toBe(3);
    expect(counts.rows()).toEqual([
      { reason: 'RULE_RANGE', contract: 'orders', count: 2 },
      { reason: 'EVENT_NOT_JSON', contract: 'inventory', count: 1 },
    ]);
  });

  it('replays the original bytes and headers without DLQ metadata, marked with its origin', () => {
    const e = describeDlq(message(2, 7, 'RULE_RANGE', 'orders'));
    const r = toReplayRecord(e, 'sluice.dlq');
    expect(r.value?.toString()).toBe('{"event_id":"e-7"}');
    expect(Object.keys(r.headers).sort()).toEqual(['sluice-producer', 'sluice-replay-of', 'traceparent']);
    expect(r.headers['sluice-replay-of']).toBe('sluice.dlq/2/7');
  });

  it('replays every value of a repeated header, in order', () => {
    const m = message(2, 8, 'RULE_RANGE', 'orders');
    m.headers.tag = Buffer.from('b');
    m.repeatedHeaders = { tag: [Buffer.from('a'), Buffer.from('b')] };
    const r = toReplayRecord(describeDlq(m), 'sluice.dlq');
    expect(r.headers.tag).toEqual([Buffer.from('a'), Buffer.from('b')]);
    expect(r.headers.traceparent).toEqual(Buffer.from('00-abc-def-01'));
  });

  // --since compared text: "10:00:02Z" sorted after "10:00:02.000Z", and another zone not at all.
  it('selects by the instant of dead-lettering, and leaves out a record without one', () => {
    const entries = [1, 2, 3].map((o) => describeDlq(message(0, o, 'RULE_RANGE', 'orders')));
    const noTime = message(0, 4, 'RULE_RANGE', 'orders');
    delete noTime.headers[DLQ_HEADERS.time];
    entries.push(describeDlq(noTime));
    const since = (iso: string) => entries.filter((e) => matches(e, { sinceMs: Date.parse(iso) })).map((e) => e.offset);
    expect(since('2026-11-29T10:00:02Z')).toEqual([2, 3]);
    expect(since('2026-11-29T11:00:02+01:00')).toEqual([2, 3]);
    expect(since('2026-11-29T10:00:02.001Z')).toEqual([3]);
  });

  it('tells failed replays from first dead letters, and filters on it', () => {
    const first = describeDlq(message(0, 1, 'RULE_RANGE', 'orders'));
    const copy = message(0, 2, 'RULE_RANGE', 'orders');
    copy.headers['sluice-replay-of'] = Buffer.from('sluice.dlq/0/1');
    const again = describeDlq(copy);
    expect(first.replayOf).toBeUndefined();
    expect(again.replayOf).toBe('sluice.dlq/0/1');
    const pick = (replays: 'include' | 'exclude' | 'only') => [first, again].filter((e) => matches(e, { replays })).map((e) => e.offset);
    expect(pick('include')).toEqual([1, 2]);
    expect(pick('exclude')).toEqual([1]);
    expect(pick('only')).toEqual([2]);
  });

  it('replays under the original key, so the event keeps its entity partition', () => {
    const r = toReplayRecord(describeDlq(message(2, 7, 'RULE_RANGE', 'orders')), 'sluice.dlq');
    expect(r.key).toEqual(Buffer.from('k'));
  });

  it('replays each event once per run: a failed replay only when its original is not replayed', () => {
    const event = Buffer.from('{"event_id":"e1"}');
    const at = (offset: number, replayOf?: number, value = event) => ({ partition: 0, offset, replayOf: replayOf === undefined ? undefined : `sluice.dlq/0/${replayOf}`, message: { value } });
    const once = new ReplayOnce('sluice.dlq');
    // R0 at 1, its failed replay R1 at 5, R1's failed replay R2 at 9; an unrelated record at 6.
    expect([at(1), at(5, 1), at(6, undefined, Buffer.from('other')), at(9, 5)].map((e) => once.take(e))).toEqual(['replay', 'skip', 'replay', 'skip']);
    // R0 gone (retention) or not selected: its failed replay is the event's only copy, replayed.
    const alone = new ReplayOnce('sluice.dlq');
    expect([at(5, 1), at(9, 5)].map((e) => alone.take(e))).toEqual(['replay', 'skip']);
    // The position names the topic: a record replayed from another DLQ topic is another record.
    expect(new ReplayOnce('other.dlq').take(at(5, 1))).toBe('replay');
    // A marker a producer set on its raw record names a real position with other bytes: not a
    // replay of that record, so it is replayed (it was skipped, and never sent).
    const forged = new ReplayOnce('sluice.dlq');
    expect([at(1), at(5, 1, Buffer.from('{"event_id":"e2"}'))].map((e) => forged.take(e))).toEqual(['replay', 'replay']);
  });

  it('holds a failed replay from the other DLQ partition until the scan has passed its original', () => {
    // A keyless event's copies land in either partition; a scan reads both in parallel.
    const value = Buffer.from('{"event_id":"e1"}');
    const r1 = { partition: 1, offset: 3, replayOf: 'sluice.dlq/0/7', message: { value } };
    const r0 = { partition: 0, offset: 7, replayOf: undefined, message: { value } };
    const once = new ReplayOnce('sluice.dlq');
    expect(once.take(r1)).toBe('wait');
    expect(once.waitingRecords).toBe(1);
    expect(once.take(r0)).toBe('replay');
    // Decided as soon as the scan reaches R0: skipped (replayed once, through R0), not held to the end.
    expect(once.released()).toEqual({ replay: [], skipped: 1 });
    expect(once.waitingRecords).toBe(0);
    expect(once.settle()).toEqual([]);
    // R0 not selected (filtered out, or gone): the held record is released once the scan passes
    // R0's offset in its partition...
    const without = new ReplayOnce('sluice.dlq');
    expect(without.take(r1)).toBe('wait');
    expect(without.take({ partition: 0, offset: 9, replayOf: undefined, message: { value: Buffer.from('x') } })).toBe('replay');
    expect(without.released()).toEqual({ replay: [r1], skipped: 0 });
    // ...or at the end, when the scan never gets there.
    const unreached = new ReplayOnce('sluice.dlq');
    expect(unreached.take(r1)).toBe('wait');
    expect(unreached.released()).toEqual({ replay: [], skipped: 0 });
    expect(unreached.settle()).toEqual([r1]);
    // The scan already past R0's offset there: decided at once.
    const past = new ReplayOnce('sluice.dlq');
    past.take({ partition: 0, offset: 8, replayOf: undefined, message: { value: Buffer.from('x') } });
    expect(past.take(r1)).toBe('replay');
  });
});
