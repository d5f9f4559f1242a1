import { decodeEvent } from '@sluice/contracts';
import { poisonCorpus } from './poison';

describe('poisonCorpus', () => {
  const corpus = poisonCorpus('t1');

  it('is refused entirely by the contracts decoder, each input with at least one issue', () => {
    for (const p of corpus) {
      const r = decodeEvent(new Uint8Array(p.bytes), { limits: { maxBytes: 512 * 1024 } });
      expect({ name: p.name, ok: r.ok }).toEqual({ name: p.name, ok: false });
    }
  });

  it('embeds a unique event_id where the bytes can carry one, findable by the audit', () => {
    const ids = corpus.filter((p) => p.id).map((p) => p.id!);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of corpus.filter((x) => x.id)) {
      expect(/"event_id"\s*:\s*"([^"]+)"/.exec(p.bytes.toString('utf8'))?.[1]).toBe(p.id);
    }
    expect(corpus.filter((p) => !p.id).length).toBeGreaterThan(3);
  });

  it('stays under the broker message limit so it can be produced to raw', () => {
    expect(Math.max(...corpus.map((p) => p.bytes.length))).toBeLessThan(1_000_000);
  });
});
