import { packBytes, transferablesOf, unpackBytes } from './packed';

describe('packed bytes', () => {
  it('round-trips present, absent and empty items in order, as views over one buffer', () => {
    const items = [Buffer.from('ab'), null, Buffer.alloc(0), undefined, Buffer.from([0, 255, 7])];
    const packed = packBytes(items);
    expect(packed.bytes.length).toBe(5);
    expect([...packed.ends]).toEqual([2, -1, 2, -1, 5]);
    const out = unpackBytes(packed);
    expect(out).toEqual([Buffer.from('ab'), undefined, Buffer.alloc(0), undefined, Buffer.from([0, 255, 7])]);
    for (const b of out) if (b) expect(b.buffer).toBe(packed.bytes.buffer);
    expect(transferablesOf(packed)).toEqual([packed.bytes.buffer, packed.ends.buffer]);
  });

  it('packs an empty list', () => {
    const packed = packBytes([]);
    expect(unpackBytes(packed)).toEqual([]);
  });
});
