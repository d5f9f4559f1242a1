import { HEADERS } from '@sluice/contracts';
import { DLQ_HEADERS } from './headers';

describe('DLQ_HEADERS', () => {
  // Bug: four DLQ header names were local copies here and in tools/src/dlq; both now use the
  // contracts' HEADERS, and the strings on the wire are unchanged.
  it('is the contracts HEADERS dlq* constants, with the strings existing DLQ records carry', () => {
    expect(DLQ_HEADERS).toEqual({
      reason: HEADERS.dlqReason,
      detail: HEADERS.dlqDetail,
      contract: HEADERS.dlqContract,
      producer: HEADERS.dlqProducer,
      time: HEADERS.dlqTime,
      sourceTopic: HEADERS.dlqSourceTopic,
      sourcePartition: HEADERS.dlqSourcePartition,
      sourceOffset: HEADERS.dlqSourceOffset,
    });
    expect(Object.values(DLQ_HEADERS).sort()).toEqual([
      'sluice-dlq-contract', 'sluice-dlq-detail', 'sluice-dlq-producer', 'sluice-dlq-reason',
      'sluice-dlq-source-offset', 'sluice-dlq-source-partition', 'sluice-dlq-source-topic', 'sluice-dlq-time',
    ]);
  });
});
