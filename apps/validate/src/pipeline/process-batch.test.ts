import { HEADERS, sampleOrderJson } from '@sluice/contracts';
import { contractsForValidate } from '../routing/contracts-adapter';
import { checkWith, type RawMessage } from '../routing/route';
import { processBatch } from './process-batch';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const contracts = contractsForValidate({ validTopicPrefix: '', now: () => NOW });
const options = { dlqTopic: 'dlq', maxEventBytes: 4096 };

function raw(offset: number, value: string): RawMessage {
  return { topic: 'raw', partition: 0, offset, key: null, value: Buffer.from(value), headers: { [HEADERS.producer]: Buffer.from('shop') } };
}

const order = (n: number) => JSON.stringify(sampleOrderJson(n, NOW, { contract: 'orders' }));

describe('processBatch', () => {
  it('routes every record in order, one output per input, and counts outcomes by reason', () => {
    const batch = [raw(0, order(1)), raw(1, 'not json'), raw(2, order(2))];
    const { records, counts } = processBatch(batch, checkWith(contracts), options, NOW);
    expect(records.map((r) => r.outcome)).toEqual(['valid', 'dlq', 'valid']);
    expect(counts).toEqual({ valid: 2, dlq: 1, byReason: { EVENT_NOT_JSON: 1 } });
  });
});
