import fc from 'fast-check';
import { MAX_ISSUES } from '../reasons';
import { parseCleanJson, parseJsonCollecting, parseStrictJson } from './strict-json';

const codes = (text: string) => parseJsonCollecting(text).issues.map((i) => `${i.code} ${i.path}`);

describe('strict JSON', () => {
  it.each([
    ['{"a:b":1,"a:b":2}', ['EVENT_DUPLICATE_KEY /a:b']],
    ['{"t":"12:00","t":"13:00"}', ['EVENT_DUPLICATE_KEY /t']],
    ['{"x":{"y":1,"y":{"z":":::"}}}', ['EVENT_DUPLICATE_KEY /x/y']],
    ['[{"a":1},{"a":1,"a":1}]', ['EVENT_DUPLICATE_KEY /1/a']],
    ['{"a/b~c":1,"a/b~c":1}', ['EVENT_DUPLICATE_KEY /a~1b~0c']],
    ['{"n":[1,9007199254740993]}', ['EVENT_NUMBER_UNSAFE /n/1']],
    ['{"n":-9007199254740993}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":1e400}', ['EVENT_NUMBER_UNSAFE /n']],
    // Not integers, yet JSON.parse reads them as integers.
    ['{"n":1999.9999999999999999}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":[0.99999999999999999]}', ['EVENT_NUMBER_UNSAFE /n/0']],
    ['{"n":99999999.999999999}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":4503599627370497.5}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":19999999999999999e-1}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":-1e-400}', ['EVENT_NUMBER_UNSAFE /n']],
    // Integers past 2^53 in other notations, read as another integer (…992).
    ['{"n":9007199254740993.0}', ['EVENT_NUMBER_UNSAFE /n']],
    ['{"n":[9.007199254740993e15]}', ['EVENT_NUMBER_UNSAFE /n/0']],
    ['{"__proto__":{"x":1},"constructor":2}', ['EVENT_FORBIDDEN_KEY /__proto__', 'EVENT_FORBIDDEN_KEY /constructor']],
    ['{"a":[{"prototype":null}]}', ['EVENT_FORBIDDEN_KEY /a/0/prototype']],
  ])('finds the issue in %s even though JSON.parse accepts it', (text, expected) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(parseCleanJson(text, 32)).toBeUndefined();
    expect(codes(text)).toEqual(expected);
  });

  it('takes integers written with a point or an exponent whose value is exact', () => {
    // Past 2^53 too, when the literal is the double's own decimal (1e23, and 2^70 as JSON.stringify prints it).
    const text = `{"a":2.5e1,"b":1.000,"c":0e-999,"d":1e+21,"e":12345678901234567e-17,"f":0.5,"g":1e+23,"h":6.02214076e23,"i":1.7976931348623157e+308,"j":${JSON.stringify(2 ** 70)}}`;
    expect(parseStrictJson(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it('takes an exponent-like run inside a string on the fast path (a UUID has one in eight events)', () => {
    for (const text of ['{"id":"4f1c9a0e-5831-4b7e-9c3d-2a6f0e8b1d4c"}', '{"id":"a90e-123456789012"}', '{"s":"12e-345x"}']) {
      expect(parseCleanJson(text, 32)).toEqual(JSON.parse(text));
    }
    // The same run as a number still goes to the strict parser.
    expect(parseCleanJson('{"n":0e-583}', 32)).toBeUndefined();
    expect(parseCleanJson('[1e-400 ]', 32)).toBeUndefined();
  });

  it('takes the fast path for clean text and gives the same value as JSON.parse', () => {
    const text = '{"a":"12:30:00","b:c":[1,2.5,-3e2,{"d":null}],"e":true}';
    expect(parseCleanJson(text, 32)).toEqual(JSON.parse(text));
    expect(parseStrictJson(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it('agrees with JSON.parse on any JSON without repeated keys (property test)', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), (text) => {
        const result = parseJsonCollecting(text);
        if (result.issues.length === 0) expect(result.value).toEqual(JSON.parse(text));
        else for (const i of result.issues) expect(['EVENT_FORBIDDEN_KEY', 'EVENT_NOT_UTF8', 'EVENT_NUMBER_UNSAFE']).toContain(i.code);
      }),
      { numRuns: 1000 },
    );
  });

  it('always reports a repeated key, wherever it is and whatever the values hold (property test)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 }), fc.nat(), (obj, pick) => {
        const keys = Object.keys(obj);
        const key = keys[pick % keys.length];
        const text = JSON.stringify(obj);
        const repeated = `{${JSON.stringify(key)}:${JSON.stringify(obj[key] ?? null)},${text.slice(1)}`;
        expect(parseJsonCollecting(repeated).issues.map((i) => i.code)).toContain('EVENT_DUPLICATE_KEY');
      }),
      { numRuns: 1000 },
    );
  });

  describe('hostile sizes', () => {
    it('keeps at most MAX_ISSUES issues, each with a clipped pointer, for thousands of repeats under a huge key', () => {
      // 5,000 repeated keys under a 100,000-character key: whole pointers were 500 MB of paths.
      const key = 'k'.repeat(100_000);
      const text = `{"payload":{"${key}":{${Array.from({ length: 5000 }, () => '"a":0').join(',')}}}}`;
      const { issues } = parseJsonCollecting(text);
      expect(issues).toHaveLength(MAX_ISSUES);
      for (const i of issues) {
        expect(i.code).toBe('EVENT_DUPLICATE_KEY');
        expect(i.path.length).toBeLessThan(300);
        expect(i.path).toMatch(/^\/payload\/k{256}…\/a$/);
      }
    });

    it('reads many short strings before one escape in linear time (four times the text, about four times the time)', () => {
      const text = (n: number) => `{"c":1,"c":1,"a":[${Array.from({ length: n }, () => '""').join(',')}],"b":"\\n"}`;
      const best = (t: string) => {
        let ms = Infinity;
        for (let i = 0; i < 3; i++) {
          const started = performance.now();
          parseJsonCollecting(t); // not clean (a repeated key): the strict parser reads it
          ms = Math.min(ms, performance.now() - started);
        }
        return ms;
      };
      const small = text(50_000);
      const large = text(200_000);
      expect(parseJsonCollecting(large).value).toMatchObject({ b: '\n' });
      // Searching for a backslash from every string's start to the end made it quadratic (~16×).
      expect(best(large)).toBeLessThan(8 * best(small) + 20);
    });
  });
});

