import { HEADERS } from './topics';

describe('HEADERS', () => {
  // Bug: validate and tools/src/dlq each kept their own copy of four DLQ header names. They are
  // contract constants now; the strings are pinned because records already on the DLQ topic
  // carry them and must stay readable.
  it('names every DLQ header validate writes and the DLQ tool reads, with unchanged strings', () => {
    expect(HEADERS).toEqual({
      contract: 'sluice-contract',
      producer: 'sluice-producer',
      dlqReason: 'sluice-dlq-reason',
      dlqDetail: 'sluice-dlq-detail',
      dlqContract: 'sluice-dlq-contract',
      dlqProducer: 'sluice-dlq-producer',
      dlqTime: 'sluice-dlq-time',
      dlqTruncated: 'sluice-dlq-truncated',
      dlqSourceTopic: 'sluice-dlq-source-topic',
      dlqSourcePartition: 'sluice-dlq-source-partition',
      dlqSourceOffset: 'sluice-dlq-source-offset',
      replayOf: 'sluice-replay-of',
    });
    expect(Object.isFrozen(HEADERS)).toBe(true);
  });

  it('gives no two headers the same name and keeps every DLQ header under the sluice-dlq- prefix (tools strip them by prefix)', () => {
    const names = Object.values(HEADERS);
    expect(new Set(names).size).toBe(names.length);
    for (const [key, name] of Object.entries(HEADERS)) {
      expect(name.startsWith('sluice-dlq-')).toBe(key.startsWith('dlq'));
    }
  });
});
