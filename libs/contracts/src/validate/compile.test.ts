import type { AvroSchema } from '../avro/schema';
import type { Issue } from '../reasons';
import { compileChecker } from './compile';

function check(schema: AvroSchema, value: unknown, ignoreTopLevel: string[] = []): { out: unknown; issues: Issue[] } {
  const issues: Issue[] = [];
  const out = compileChecker(schema, { mode: 'json', rules: [], ignoreTopLevel })(value, '', issues);
  return { out, issues };
}

describe('compileChecker records', () => {
  const schema = {
    type: 'record',
    name: 'R',
    fields: [
      { name: 'id', type: 'string' },
      { name: 'n', type: 'long' },
      { name: 'note', type: ['null', 'string'], default: null },
      { name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'x', type: 'int' }] } },
    ],
  } as const satisfies AvroSchema;

  it('returns the fields in schema order with defaults filled', () => {
    const { out, issues } = check(schema, { inner: { x: 1 }, n: 2, id: 'a' });
    expect(issues).toEqual([]);
    expect(Object.keys(out as object)).toEqual(['id', 'n', 'note', 'inner']);
    expect(out).toEqual({ id: 'a', n: 2, note: null, inner: { x: 1 } });
  });

  it('reports missing, mistyped, unknown and forbidden keys with their pointers', () => {
    const value = JSON.parse('{"n":"2","inner":{"x":1.5,"y":0},"extra":1,"__proto__":{}}') as unknown;
    const { issues } = check(schema, value);
    expect(issues.map((i) => `${i.code} ${i.path}`).sort()).toEqual(
      [
        'EVENT_FIELD_MISSING /id',
        'EVENT_SCHEMA_MISMATCH /n',
        'EVENT_SCHEMA_MISMATCH /inner/x',
        'EVENT_FIELD_UNKNOWN /inner/y',
        'EVENT_FIELD_UNKNOWN /extra',
        'EVENT_FORBIDDEN_KEY /__proto__',
      ].sort(),
    );
  });

  it('does not take a field from the prototype chain', () => {
    const value = Object.assign(Object.create({ id: 'inherited' }) as object, { n: 1, inner: { x: 1 } });
    expect(check(schema, value).issues.map((i) => `${i.code} ${i.path}`)).toEqual(['EVENT_FIELD_MISSING /id']);
  });

  it('lets ignored top-level keys through without reporting them', () => {
    expect(check(schema, { id: 'a', n: 1, inner: { x: 1 }, contract: 'r' }, ['contract']).issues).toEqual([]);
  });

  it('treats field names as data, never as code, even names no Avro schema allows', () => {
    const hostile = ['"]; globalThis.pwned = 1; //', 'a\u2028b', 'back\\slash', '__proto__', 'constructor'];
    const record = {
      type: 'record',
      name: 'H',
      fields: hostile.map((name) => ({ name, type: 'int' as const })),
    } as unknown as AvroSchema;
    const value: Record<string, unknown> = {};
    for (const [i, name] of hostile.entries()) Object.defineProperty(value, name, { value: i, enumerable: true });
    const { out, issues } = check(record, value);
    expect(issues).toEqual([]);
    expect((globalThis as { pwned?: unknown }).pwned).toBeUndefined();
    // every name is an own property with its value; __proto__ did not replace the prototype
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    for (const [i, name] of hostile.entries()) expect(Object.getOwnPropertyDescriptor(out, name)?.value).toBe(i);
  });
});
