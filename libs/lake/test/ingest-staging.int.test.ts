import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { LakeQueryEngine, LakeTable, LocalStorage, type ColumnSpec } from '../src';
import { tempDir } from './helpers';

// JS rows travel in slices: numbers, dates-as-epoch and short decimals as DOUBLE lists, text
// joined per slice and split again in SQL (a list of strings when a value holds the separator or
// the null marker); every value must still land exactly as given, row for row.
const columns: ColumnSpec[] = [
  { name: 'id', type: 'long' },
  { name: 'status', type: 'string' },
  { name: 'amount', type: 'decimal(12,2)' },
  { name: 'wide', type: 'decimal(38,10)' },
  { name: 'big', type: 'long' },
  { name: 'day', type: 'date' },
  { name: 'at', type: 'timestamp' },
  { name: 'note', type: 'string' },
];
const STATUSES = [`it's`, 'ü"ñ', '🚀 ok', 'a,b\nc', '', null];
const AMOUNTS = ['0.29', '-0.07', '9999999999.99', '0', '12.5', 1.25, '-0.00', null];
const WIDE = ['12345678901234567.1234567891', '0.0000000001', null];
const N = 20_000; // more than two slices of 8,192 rows
const rowAt = (i: number) => ({
  id: i,
  status: STATUSES[i % STATUSES.length],
  amount: AMOUNTS[i % AMOUNTS.length],
  wide: WIDE[i % WIDE.length],
  big: i % 2 ? 2n ** 60n + BigInt(i) : -(2n ** 62n) - BigInt(i),
  day: i % 5 === 0 ? null : `2026-0${1 + (i % 9)}-1${i % 10}`,
  at: i % 7 === 0 ? null : new Date(Date.UTC(2026, 0, 1) + i * 1001),
  note: `n'${i}"ß`, // high cardinality: stays on the text path
});

describe('JS row staging (sliced lists, joined text, DOUBLE decimals)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('lake-staging');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('joined text and double-staged decimals round-trip exactly over several slices: quotes, non-ASCII, nulls, bigint beyond 2^53, DATE, TIMESTAMPTZ', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 't')), { columns });
    const rows = Array.from({ length: N }, (_, i) => rowAt(i));
    await table.append({ rows });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      const got = await session.queryJson(
        `SELECT id, status, amount::VARCHAR AS amount, wide::VARCHAR AS wide, big::VARCHAR AS big, day::VARCHAR AS day, epoch_ms("at") AS "at", note FROM t ORDER BY id`,
      );
      expect(got).toHaveLength(N);
      const wantAmount = (v: unknown) => (v === null ? null : Number(v).toFixed(2).replace(/^-0\.00$/, '0.00'));
      const wantWide = (v: string | null) => (v === null ? null : Number(v.split('.')[0]) === 0 ? `0.${v.split('.')[1].padEnd(10, '0')}` : `${v.split('.')[0]}.${v.split('.')[1].padEnd(10, '0')}`);
      for (let i = 0; i < N; i++) {
        const w = rowAt(i);
        expect(got[i]).toEqual({
          id: String(i),
          status: w.status,
          amount: wantAmount(w.amount),
          wide: wantWide(w.wide),
          big: String(w.big),
          day: w.day,
          at: w.at === null ? null : String(w.at.getTime()),
          note: w.note,
        });
      }
    } finally {
      session.close();
    }
  });

  it('a decimal with more fraction digits than the scale is still rounded by DuckDB from its text, and garbage is LAKE_INVALID_INPUT', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'u')), { columns });
    const rows = Array.from({ length: 1500 }, (_, i) => ({ ...rowAt(i), amount: i === 7 ? '1.005' : '2.50' }));
    await table.append({ rows });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      expect(await session.queryJson('SELECT amount::VARCHAR AS a FROM t WHERE id = 7')).toEqual([{ a: '1.01' }]);
    } finally {
      session.close();
    }
    const bad = Array.from({ length: 1500 }, (_, i) => ({ ...rowAt(i), amount: i === 9 ? 'ten' : '1.00' }));
    await expect(table.append({ rows: bad })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
  });

  it('text holding the separator or the null marker, empty strings, all-null columns and one-row batches land exactly', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'v')), {
      columns: [
        { name: 'id', type: 'long' },
        { name: 'plain', type: 'string' },
        { name: 'hostile', type: 'string' },
        { name: 'empty', type: 'string' },
        { name: 'none', type: 'string' },
        { name: 'flag', type: 'boolean' },
      ],
    });
    const HOSTILE = ['a\u001fb', '\u001e', '\u001f', '', null, 'x\u001e\u001fy'];
    const rowOf = (i: number) => ({ id: i, plain: i % 4 === 0 ? null : `p${i}`, hostile: HOSTILE[i % HOSTILE.length], empty: i % 3 === 0 ? null : '', none: null, flag: i % 5 === 0 ? null : i % 2 === 0 });
    await table.append({ rows: Array.from({ length: 10_000 }, (_, i) => rowOf(i)) });
    await table.append({ rows: [rowOf(10_000)] });
    await table.append({ rows: [{ id: 10_001, plain: '', hostile: '', empty: '', none: null, flag: true }] });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      const got = await session.queryJson('SELECT id, plain, hostile, empty, none, flag FROM t ORDER BY id');
      const want = [...Array.from({ length: 10_001 }, (_, i) => rowOf(i)), { id: 10_001, plain: '', hostile: '', empty: '', none: null, flag: true }];
      expect(got).toEqual(want.map((w) => ({ ...w, id: String(w.id) })));
    } finally {
      session.close();
    }
  });

  it('a columnar source lands as the same rows would; a missing column is null; a foreign name or a short column is refused', async () => {
    const byRows = await LakeTable.create(new LocalStorage(path.join(dir, 'c-rows')), { columns });
    const byColumns = await LakeTable.create(new LocalStorage(path.join(dir, 'c-cols')), { columns });
    const rows = Array.from({ length: N }, (_, i) => rowAt(i));
    await byRows.append({ rows: rows.map(({ note: _note, ...rest }) => rest) });
    const values = Object.fromEntries(columns.filter((c) => c.name !== 'note').map((c) => [c.name, rows.map((r) => r[c.name as keyof typeof r])]));
    await byColumns.append({ columns: values, rowCount: N });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ a: await byRows.currentView(), b: await byColumns.currentView() });
    try {
      const all = `SELECT id, status, amount, wide, big, day, "at", note FROM`;
      expect(await session.queryJson(`SELECT count(*) AS n FROM b WHERE note IS NULL`)).toEqual([{ n: String(N) }]);
      expect(await session.queryJson(`SELECT count(*) AS n FROM ((${all} a EXCEPT ALL ${all} b) UNION ALL (${all} b EXCEPT ALL ${all} a))`)).toEqual([{ n: '0' }]);
    } finally {
      session.close();
    }
    await expect(byColumns.append({ columns: { ...values, nope: values.id }, rowCount: N })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column: 'nope' } });
    await expect(byColumns.append({ columns: { ...values, status: values.status.slice(1) }, rowCount: N })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column: 'status' } });
    await expect(byColumns.append({ columns: values, rowCount: -1 })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT' });
    expect((await byColumns.snapshot()).version).toBe(1);
  });

  it('a columnar source for a schema with nested types goes through the JSON path with the same values', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'c-nested')), {
      columns: [
        { name: 'id', type: 'long' },
        { name: 'tags', type: { type: 'array', elementType: 'string', containsNull: true } },
      ],
    });
    await table.append({ columns: { id: [1, 2, 3], tags: [['a', "b'c"], [], null] }, rowCount: 3 });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      expect(await session.queryJson('SELECT id, tags FROM t ORDER BY id')).toEqual([
        { id: '1', tags: ['a', "b'c"] },
        { id: '2', tags: [] },
        { id: '3', tags: null },
      ]);
    } finally {
      session.close();
    }
  });

  it('timestamps given as whole epoch milliseconds land as the same instants as Dates and ISO text, in every column form; other numbers are refused', async () => {
    const at = [Date.UTC(2026, 10, 29, 23, 59, 59, 999), -1, 0, null, Date.UTC(1900, 0, 1), -62_167_219_200_001, 8.64e15, -8.64e15];
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'epoch')), {
      columns: [
        { name: 'id', type: 'long' },
        { name: 'ms', type: 'timestamp' }, // numbers only: the DOUBLE list path
        { name: 'mixed', type: 'timestamp' }, // numbers and Dates
        { name: 'text', type: 'timestamp' }, // numbers among ISO strings: the text path
      ],
    });
    const rows = at.map((ms, id) => ({
      id,
      ms,
      mixed: ms === null ? null : id % 2 ? new Date(ms) : ms,
      text: ms === null ? null : id % 2 ? new Date(ms).toISOString() : ms,
    }));
    await table.append({ rows });
    await table.append({ columns: { id: rows.map((r) => r.id + 100), ms: at, mixed: rows.map((r) => r.mixed), text: rows.map((r) => r.text) }, rowCount: rows.length });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      const got = await session.queryJson('SELECT id, epoch_ms(ms) AS ms, epoch_ms(mixed) AS mixed, epoch_ms(text) AS text FROM t ORDER BY id');
      const want = (ms: number | null) => (ms === null ? null : String(ms));
      expect(got).toEqual([...at.map((ms, id) => ({ id: String(id), ms: want(ms), mixed: want(ms), text: want(ms) })), ...at.map((ms, id) => ({ id: String(id + 100), ms: want(ms), mixed: want(ms), text: want(ms) }))]);
    } finally {
      session.close();
    }
    for (const bad of [1.5, 8.64e15 + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(table.append({ rows: [{ id: 9, ms: bad }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column: 'ms' } });
      await expect(table.append({ rows: [{ id: 9, text: 'x' }, { id: 10, text: bad }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column: 'text' } });
    }
    // An invalid Date is refused the same way, naming the column.
    for (const column of ['mixed', 'text']) {
      await expect(table.append({ rows: [{ id: 9, [column]: new Date(Number.NaN) }, { id: 10, text: 'x' }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column } });
    }
    expect((await table.snapshot()).version).toBe(2);
  });

  it('epoch-millisecond numbers at nested timestamp positions (struct field, array item, map value) go through the JSON path as instants', async () => {
    const table = await LakeTable.create(new LocalStorage(path.join(dir, 'epoch-nested')), {
      columns: [
        { name: 'id', type: 'long' },
        { name: 'at', type: 'timestamp' },
        { name: 'span', type: { type: 'struct', fields: [{ name: 'from', type: 'timestamp', nullable: true, metadata: {} }, { name: 'label', type: 'string', nullable: true, metadata: {} }] } },
        { name: 'times', type: { type: 'array', elementType: 'timestamp', containsNull: true } },
        { name: 'seen', type: { type: 'map', keyType: 'string', valueType: 'timestamp', valueContainsNull: true } },
      ],
    });
    const t = Date.UTC(2026, 11, 1, 12, 0, 0, 123);
    await table.append({
      rows: [
        { id: 1, at: t, span: { from: t + 1, label: 'a' }, times: [t + 2, null, new Date(t + 3), 8.64e15, new Date(8.64e15)], seen: { x: t + 4 } },
        { id: 2, at: new Date(t), span: null, times: null, seen: null },
      ],
    });
    const engine = await LakeQueryEngine.create();
    const session = await engine.open({ t: await table.currentView() });
    try {
      const got = await session.queryJson(
        `SELECT id, epoch_ms("at") AS "at", epoch_ms(span."from") AS "from", span.label AS label, list_transform(times, x -> epoch_ms(x)) AS times, epoch_ms(seen['x']) AS x FROM t ORDER BY id`,
      );
      expect(got).toEqual([
        { id: '1', at: String(t), from: String(t + 1), label: 'a', times: [String(t + 2), null, String(t + 3), '8640000000000000', '8640000000000000'], x: String(t + 4) },
        { id: '2', at: String(t), from: null, label: null, times: null, x: null },
      ]);
    } finally {
      session.close();
    }
    await expect(table.append({ rows: [{ id: 3, times: [1.5] }] })).rejects.toMatchObject({ code: 'LAKE_INVALID_INPUT', details: { column: 'times' } });
  });
});
