import avro from 'avsc';
import { CONTRACTS, orders, ORDERS_V1, ORDERS_V2, type AnyContract, type SchemaVersion } from '@sluice/contracts';
import { CANDIDATES, type CandidateName } from './candidates';
import { readerBreaks } from './compatibility';
import { checkContract, checkLevel, pairBreaks, renderReport } from './gate';

const avscAgrees = (reader: object, writer: object) => {
  try {
    avro.Type.forSchema(reader as avro.Schema).createResolver(avro.Type.forSchema(writer as avro.Schema));
    return true;
  } catch {
    return false;
  }
};

const messages = (reader: object, writer: object) => readerBreaks(reader, writer).map((b) => `${b.path}: ${b.message}`).join('\n');

describe('readerBreaks', () => {
  // backward: new reader, old (v2) writer; forward: old (v2) reader, new writer.
  const expectations: [CandidateName, boolean, boolean][] = [
    ['addOptionalField', true, true],
    ['removeRequiredField', true, false],
    ['changeType', false, false],
    ['renameWithoutAlias', false, false],
    ['renameWithAlias', true, false],
    ['removeEnumSymbol', false, true],
    ['addRequiredField', false, true],
    ['widenIntToLong', true, false],
    ['removeOptionalField', true, true],
  ];

  it.each(expectations)('%s: backward %s, forward %s — and avsc agrees', (name, backward, forward) => {
    const candidate = CANDIDATES[name];
    expect(readerBreaks(candidate, ORDERS_V2).length === 0).toBe(backward);
    expect(readerBreaks(ORDERS_V2, candidate).length === 0).toBe(forward);
    expect(avscAgrees(candidate, ORDERS_V2)).toBe(backward);
    expect(avscAgrees(ORDERS_V2, candidate)).toBe(forward);
  });

  it('explains a removed field: where, and what to do', () => {
    expect(messages(ORDERS_V2, CANDIDATES.removeRequiredField)).toBe(
      'payload.currency: field "payload.currency" is not in the writer\'s schema and has no default: the reader cannot fill it (give it a default, or keep it in the writer\'s schema)',
    );
  });

  it('explains a type change with the allowed promotions', () => {
    expect(messages(CANDIDATES.changeType, ORDERS_V2)).toBe(
      'payload.total_cents: type of "payload.total_cents" changed from long to string: long values cannot be read as string (long may only widen to float, double)',
    );
  });

  it('recognises a rename and suggests the alias', () => {
    expect(messages(CANDIDATES.renameWithoutAlias, ORDERS_V2)).toContain('it looks renamed from "customer_id": the reader needs "aliases": ["customer_id"] on "buyer_id"');
  });

  it('names the enum symbols a reader lacks', () => {
    expect(messages(CANDIDATES.removeEnumSymbol, ORDERS_V2)).toContain('the writer may write "cancelled"');
  });

  it('accepts an enum symbol removal when the reader declares a default symbol', () => {
    const withDefault = JSON.parse(JSON.stringify(CANDIDATES.removeEnumSymbol)) as { fields: { name: string; type: unknown }[] };
    const payload = (withDefault.fields.find((f) => f.name === 'payload')!.type as { fields: { name: string; type: { default?: string } }[] }[])[1];
    payload.fields.find((f) => f.name === 'status')!.type.default = 'created';
    expect(readerBreaks(withDefault, ORDERS_V2)).toEqual([]);
    expect(avscAgrees(withDefault, ORDERS_V2)).toBe(true);
  });

  it('reads v1 with v2 and v2 with v1 (the repository history is FULL)', () => {
    expect(readerBreaks(ORDERS_V2, ORDERS_V1)).toEqual([]);
    expect(readerBreaks(ORDERS_V1, ORDERS_V2)).toEqual([]);
  });
});

describe('gate levels', () => {
  const history = (...schemas: object[]): SchemaVersion[] => schemas.map((schema, i) => ({ version: i + 1, schema: schema as SchemaVersion['schema'] }));

  it('tells transitive from non-transitive: C reads B, but not A', () => {
    // B adds z with a default; C drops the default: C can read B's data (it has z) but not A's.
    const a = { type: 'record', name: 'T', fields: [{ name: 'x', type: 'int' }] };
    const b = { type: 'record', name: 'T', fields: [{ name: 'x', type: 'int' }, { name: 'z', type: 'int', default: 0 }] };
    const c = { type: 'record', name: 'T', fields: [{ name: 'x', type: 'int' }, { name: 'z', type: 'int' }] };
    expect(checkLevel(history(a, b, c), 'BACKWARD').findings).toEqual([]);
    const transitive = checkLevel(history(a, b, c), 'BACKWARD_TRANSITIVE').findings;
    expect(transitive).toHaveLength(1);
    expect(transitive[0]).toMatchObject({ newer: 3, older: 1, direction: 'BACKWARD' });
  });

  it('passes every contract history in the repository', () => {
    const contracts: AnyContract[] = Object.values(CONTRACTS);
    expect(contracts.map((c) => c.name).sort()).toEqual(['clickstream', 'inventory', 'orders']);
    for (const c of contracts) expect({ contract: c.name, ok: checkContract(c).ok }).toEqual({ contract: c.name, ok: true });
  });

  it('fails a contract whose declared level a candidate breaks, with plain words per break', () => {
    const report = checkContract(orders, CANDIDATES.removeEnumSymbol);
    expect(report.ok).toBe(false);
    const text = renderReport(report);
    expect(text).toContain('orders: versions 1, 2, 3; declared FULL_TRANSITIVE — BROKEN');
    expect(text).toContain('a v3 reader cannot read v2 data: enum "payload.status"');
    expect(text).toContain('a v3 reader cannot read v1 data');
    expect(report.levels.find((l) => l.level === 'FORWARD')?.findings).toEqual([]);
  });

  // Avro lets an optional field go; validate would then drop, without a word, what producers still
  // on the version that had it send in it, while the tables keep the column.
  it('refuses a version that drops a field an earlier version had, even an optional one', () => {
    expect(pairBreaks(CANDIDATES.removeOptionalField, ORDERS_V2)).toEqual([]);
    const report = checkContract(orders, CANDIDATES.removeOptionalField);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([expect.stringContaining('field "payload.coupon_code" of version 2 is not in version 3')]);
    expect(renderReport(report)).toContain('problem: field "payload.coupon_code" of version 2 is not in version 3');
    // Its Avro levels are still reported: the field removal is not an Avro break.
    expect(report.levels.find((l) => l.level === 'FULL_TRANSITIVE')?.findings).toEqual([]);
    // A rename with an alias keeps the field under its new name: only the old readers' FORWARD break is reported.
    expect(checkContract(orders, CANDIDATES.renameWithAlias).problems).toEqual([]);
    // So does a record-typed field renamed with an alias: its subfields are kept under it.
    const renamedRecord = structuredClone(ORDERS_V2) as unknown as { fields: Array<{ name: string; aliases?: string[] }> };
    const payload = renamedRecord.fields.find((f) => f.name === 'payload') as { name: string; aliases?: string[] };
    payload.name = 'body';
    payload.aliases = ['payload'];
    expect(checkContract(orders, renamedRecord).problems).toEqual([]);
    payload.aliases = [];
    expect(checkContract(orders, renamedRecord).problems).toEqual(expect.arrayContaining([expect.stringContaining('field "payload.coupon_code" of version 2')]));
  });

  it('reports a history with a gap in its version numbers', () => {
    const gap: AnyContract = { ...orders, versions: [orders.versions[0], { version: 3, schema: ORDERS_V2 }] };
    const report = checkContract(gap);
    expect(report.ok).toBe(false);
    expect(report.problems[0]).toContain('version 3 is at position 2');
  });
});

describe('readerBreaks beyond records — agreeing with avsc on every case', () => {
  const rec = (fields: unknown[], name = 'ns.R', extra: object = {}) => ({ type: 'record', name, fields, ...extra });
  const cases: [string, object, object, boolean][] = [
    // [name, reader, writer, compatible]
    ['array items widen int → long', rec([{ name: 'a', type: { type: 'array', items: 'long' } }]), rec([{ name: 'a', type: { type: 'array', items: 'int' } }]), true],
    ['array items narrow long → int', rec([{ name: 'a', type: { type: 'array', items: 'int' } }]), rec([{ name: 'a', type: { type: 'array', items: 'long' } }]), false],
    ['map values string → int', rec([{ name: 'm', type: { type: 'map', values: 'int' } }]), rec([{ name: 'm', type: { type: 'map', values: 'string' } }]), false],
    ['nullable reader of a plain writer', rec([{ name: 'a', type: ['null', 'int'] }]), rec([{ name: 'a', type: 'int' }]), true],
    ['plain reader of a nullable writer', rec([{ name: 'a', type: 'int' }]), rec([{ name: 'a', type: ['null', 'int'] }]), false],
    ['union reader without a branch for the writer', rec([{ name: 'a', type: ['int', 'string'] }]), rec([{ name: 'a', type: 'boolean' }]), false],
    ['union reader picking a promoted branch', rec([{ name: 'a', type: ['null', 'double'] }]), rec([{ name: 'a', type: 'long' }]), true],
    ['string read as bytes', rec([{ name: 'a', type: 'bytes' }]), rec([{ name: 'a', type: 'string' }]), true],
    ['fixed size change', rec([{ name: 'f', type: { type: 'fixed', name: 'ns.F', size: 8 } }]), rec([{ name: 'f', type: { type: 'fixed', name: 'ns.F', size: 16 } }]), false],
    ['record renamed with an alias', rec([{ name: 'a', type: 'int' }], 'ns.New', { aliases: ['ns.Old'] }), rec([{ name: 'a', type: 'int' }], 'ns.Old'), true],
    ['record renamed without an alias', rec([{ name: 'a', type: 'int' }], 'ns.New'), rec([{ name: 'a', type: 'int' }], 'ns.Old'), false],
    [
      'named enum referenced twice, symbol added on the reader',
      rec([
        { name: 'a', type: { type: 'enum', name: 'ns.E', symbols: ['x', 'y', 'z'] } },
        { name: 'b', type: 'ns.E' },
      ]),
      rec([
        { name: 'a', type: { type: 'enum', name: 'ns.E', symbols: ['x', 'y'] } },
        { name: 'b', type: 'ns.E' },
      ]),
      true,
    ],
    [
      'named enum referenced twice, symbol removed on the reader',
      rec([
        { name: 'a', type: { type: 'enum', name: 'ns.E', symbols: ['x'] } },
        { name: 'b', type: 'ns.E' },
      ]),
      rec([
        { name: 'a', type: { type: 'enum', name: 'ns.E', symbols: ['x', 'y'] } },
        { name: 'b', type: 'ns.E' },
      ]),
      false,
    ],
    [
      'recursive record (a linked list) gaining an optional field',
      rec([{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'ns.R'] }, { name: 'w', type: ['null', 'int'], default: null }]),
      rec([{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'ns.R'] }]),
      true,
    ],
    [
      'recursive record changing a field type',
      rec([{ name: 'v', type: 'string' }, { name: 'next', type: ['null', 'ns.R'] }]),
      rec([{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'ns.R'] }]),
      false,
    ],
  ];

  it.each(cases)('%s', (_name, reader, writer, compatible) => {
    expect(readerBreaks(reader, writer).length === 0).toBe(compatible);
    expect(avscAgrees(reader, writer)).toBe(compatible);
  });
});
