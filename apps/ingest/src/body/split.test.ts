import { measureDepth, splitJson, splitNdjson } from './split';

const b = (s: string) => Buffer.from(s, 'utf8');
const texts = (r: ReturnType<typeof splitJson>) => (r.ok ? r.events.map((e) => e.bytes.toString()) : r);

describe('splitJson', () => {
  it('keeps a single object as one event, bytes untouched', () => {
    expect(texts(splitJson(b('  {"a": 1}\n'), 10))).toEqual(['{"a": 1}']);
  });

  it('cuts a top-level array at top-level commas only', () => {
    const body = '[{"a":"x,]}"}, {"b":[1,2,{"c":3}]} ,"s\\"]", 7]';
    expect(texts(splitJson(b(body), 10))).toEqual(['{"a":"x,]}"}', '{"b":[1,2,{"c":3}]}', '"s\\"]"', '7']);
  });

  it('measures depth per element', () => {
    const r = splitJson(b('[{"a":{"b":{}}}, {}]'), 10);
    expect(r.ok && r.events.map((e) => e.depth)).toEqual([3, 1]);
  });

  it.each([
    ['[', 'the array is not closed'],
    ['[{"a":1}', 'the array is not closed'],
    ['[1,2]]', 'unexpected text after the array at byte 5'],
    ['[1,,2]', 'empty array element before byte 3'],
    ['[1,]', 'empty array element before byte 3'],
    ['["abc', 'unterminated string'],
    ['[}', 'unbalanced bracket at byte 1'],
    // A closer of the other kind would hide the comma after it inside the element: the element
    // boundaries, and with them the indexes of the answer, would be wrong.
    ['[{"note":[1}, {"a":1}], {"b":2}]', 'mismatched bracket at byte 11'],
    ['[[1}, {"a":1}]', 'mismatched bracket at byte 3'],
    ['[{"a":[1,{"b":2]}]', 'mismatched bracket at byte 15'],
    ['[]', 'the batch is empty'],
    ['', 'the body is empty'],
    ['   \n ', 'the body is empty'],
  ])('refuses the malformed frame %j', (body, reason) => {
    expect(splitJson(b(body), 10)).toEqual({ ok: false, reason });
  });

  it('counts events past the limit without keeping them', () => {
    expect(splitJson(b('[1,2,3,4]'), 3)).toEqual({ ok: false, tooMany: true, count: 4 });
  });
});

describe('splitNdjson', () => {
  it('one event per non-blank line, with line numbers and CRLF', () => {
    const r = splitNdjson(b('{"a":1}\r\n\n  {"b":2}\n'), 10);
    expect(r.ok && r.events.map((e) => [e.index, e.line, e.bytes.toString()])).toEqual([
      [0, 1, '{"a":1}'],
      [1, 3, '{"b":2}'],
    ]);
  });

  it('leaves depth to the strict parser (not measured)', () => {
    const r = splitNdjson(b('[[[[1]]]]'), 10);
    expect(r.ok && r.events[0].depth).toBe(0);
  });

  it('refuses empty bodies and too many lines', () => {
    expect(splitNdjson(b('\n\n'), 10)).toEqual({ ok: false, reason: 'the body holds no event' });
    expect(splitNdjson(b('1\n2\n3'), 2)).toEqual({ ok: false, tooMany: true, count: 3 });
  });
});

describe('measureDepth', () => {
  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(measureDepth(b('{"a":"[[[\\"{{{"}'), 0, 16)).toBe(1);
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    expect(measureDepth(b(deep), 0, deep.length)).toBe(5000);
  });
});
