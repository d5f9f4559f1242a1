import avro from 'avsc';
import type { AvroRecord, AvroSchema } from '../avro/schema';
import type { AnyContract } from '../contract';
import { decodeEvent } from '../decode';
import { ENVELOPE_FIELD_NAMES } from '../envelope';
import { columnsOf, placementOf, toColumns, toRow } from '../rows';
import { sampleClickJson, sampleInventoryJson, sampleOrderJson } from '../samples';
import { DLQ_TOPIC, RAW_TOPIC } from '../topics';
import { CONTRACT_NAMES, CONTRACTS, contractByName } from './index';

const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const all: [string, AnyContract][] = Object.entries(CONTRACTS);

/** Dotted paths of every field in a record schema (through nullable records). */
function fieldPaths(schema: AvroRecord, prefix = ''): string[] {
  return schema.fields.flatMap((f) => {
    const path = prefix === '' ? f.name : `${prefix}.${f.name}`;
    const inner: AvroSchema = Array.isArray(f.type) ? (f.type[1] as AvroSchema) : f.type;
    return typeof inner === 'object' && !Array.isArray(inner) && (inner as AvroRecord).type === 'record' ? [path, ...fieldPaths(inner as AvroRecord, path)] : [path];
  });
}

describe.each(all)('contract %s', (name, contract) => {
  it('numbers its versions 1..n, the latest last, each a valid Avro schema', () => {
    expect(contract.versions.map((v) => v.version)).toEqual(contract.versions.map((_, i) => i + 1));
    expect(contract.latest).toBe(contract.versions[contract.versions.length - 1]);
    for (const v of contract.versions) expect(() => avro.Type.forSchema(v.schema as avro.Schema)).not.toThrow();
  });

  it('starts every version with the envelope and carries its key fields at the top', () => {
    for (const v of contract.versions) {
      expect(v.schema.fields.slice(0, ENVELOPE_FIELD_NAMES.length).map((f) => f.name)).toEqual(ENVELOPE_FIELD_NAMES);
      for (const key of contract.keyFields) expect(v.schema.fields.find((f) => f.name === key)?.type).toBe('string');
    }
  });

  it('has rules only for fields that exist (a typo in a rule path would silently check nothing)', () => {
    const paths = new Set(contract.versions.flatMap((v) => fieldPaths(v.schema)));
    for (const rule of contract.rules) expect(paths).toContain(rule.path);
  });

  it('names its topic, subject, tables and buckets by the conventions', () => {
    expect(contract.topic.name).toBe(`sluice.${name}.valid`);
    expect(contract.subject).toBe(`sluice.${name}.valid-value`);
    expect(contract.tables).toEqual({ bronze: `bronze_${name}`, silver: `silver_${name}` });
    expect(contract.buckets % contract.topic.partitions).toBe(0);
    expect(contract.partitionColumns).toEqual({ bronze: ['event_date', 'bucket'], silver: ['bucket'] });
    expect(contractByName(name)).toBe(contract);
  });

  it('flattens into unique columns that its aggregates refer to', () => {
    const columns = columnsOf(contract).map((c) => c.name);
    expect(new Set(columns).size).toBe(columns.length);
    for (const agg of contract.aggregates) {
      expect(agg.table).toBe(`gold_${name}_${agg.name}`);
      for (const g of agg.groupBy) expect(columns).toContain(g);
      for (const m of agg.measures) if (m.fn === 'sum') expect(columns).toContain(m.column);
    }
  });
});

describe('contract catalog', () => {
  it('holds orders, inventory and clickstream with distinct record names (registry ids map back by name)', () => {
    expect([...CONTRACT_NAMES].sort()).toEqual(['clickstream', 'inventory', 'orders']);
    const names = all.map(([, c]) => c.latest.schema.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('declares the gold aggregates the platform needs', () => {
    expect(CONTRACTS.clickstream.aggregates[0]).toMatchObject({ windowMs: 60_000, groupBy: ['user_id'], measures: [{ fn: 'count' }] });
    expect(CONTRACTS.orders.aggregates[0]).toMatchObject({ windowMs: 60_000, groupBy: ['status'] });
    expect(CONTRACTS.orders.aggregates[0].measures.map((m) => m.fn)).toEqual(['count', 'sum']);
  });

  it('keeps topic names distinct', () => {
    const topics = [RAW_TOPIC.name, DLQ_TOPIC.name, ...all.map(([, c]) => c.topic.name)];
    expect(new Set(topics).size).toBe(topics.length);
  });

  it('has no unknown contract behind Object.prototype names', () => {
    expect(contractByName('toString')).toBeUndefined();
    expect(contractByName('__proto__')).toBeUndefined();
  });
});

describe('rows and placement', () => {
  it('flattens an upsert and a delete to the same columns, nulls for a tombstone payload', () => {
    const up = decodeEvent(sampleInventoryJson(3, NOW), { contract: 'inventory', now: NOW });
    const del = decodeEvent(sampleInventoryJson(3, NOW, { op: 'delete', payload: null }), { contract: 'inventory', now: NOW });
    if (!up.ok || !del.ok) throw new Error('fixtures invalid');
    const columns = columnsOf(CONTRACTS.inventory).map((c) => c.name);
    expect(Object.keys(toRow(CONTRACTS.inventory, up.event))).toEqual(columns);
    expect(toRow(CONTRACTS.inventory, del.event)).toMatchObject({ op: 'delete', on_hand: null, reserved: null, sku: 'sku-3' });
    expect(toRow(CONTRACTS.inventory, up.event)).toMatchObject({ on_hand: 103, reserved: 3, event_time: NOW });
  });

  it('toColumns holds the values of toRow, column by column', () => {
    const events = [
      decodeEvent(sampleInventoryJson(3, NOW), { contract: 'inventory', now: NOW }),
      decodeEvent(sampleInventoryJson(4, NOW, { op: 'delete', payload: null }), { contract: 'inventory', now: NOW }),
      decodeEvent(sampleInventoryJson(5, NOW + 1), { contract: 'inventory', now: NOW }),
    ].map((d) => {
      if (!d.ok) throw new Error('fixtures invalid');
      return d.event;
    });
    const columns = toColumns(CONTRACTS.inventory, events);
    expect(Object.keys(columns)).toEqual(columnsOf(CONTRACTS.inventory).map((c) => c.name));
    const rows = events.map((e) => toRow(CONTRACTS.inventory, e));
    for (const [name, values] of Object.entries(columns)) expect(values).toEqual(rows.map((r) => r[name]));
    expect(columns.on_hand[1]).toBeNull();
    expect(toColumns(CONTRACTS.inventory, [])).toEqual(Object.fromEntries(columnsOf(CONTRACTS.inventory).map((c) => [c.name, []])));
  });

  it('types columns from the schema: timestamps, enums with symbols, nullable payload', () => {
    const cols = Object.fromEntries(columnsOf(CONTRACTS.orders).map((c) => [c.name, c]));
    expect(cols.event_time).toEqual({ name: 'event_time', type: 'timestamp-millis', nullable: false });
    expect(cols.status).toMatchObject({ type: 'string', nullable: true, symbols: ['created', 'paid', 'shipped', 'delivered', 'cancelled'] });
    expect(cols.coupon_code).toEqual({ name: 'coupon_code', type: 'string', nullable: true });
    expect(cols.version).toEqual({ name: 'version', type: 'long', nullable: false });
  });

  it('places an event by UTC date and murmur2 bucket of its entity key', () => {
    const late = Date.parse('2026-06-01T23:59:59.999Z');
    const click = decodeEvent(sampleClickJson(9, late), { contract: 'clickstream', now: late });
    if (!click.ok) throw new Error('fixture invalid');
    const placement = placementOf(CONTRACTS.clickstream, click.event);
    expect(placement.key).toBe('user-9');
    expect(placement.eventDate).toBe('2026-06-01');
    // Kafka's murmur2 partitioner of "user-9" over the contract's 32 buckets (vectors: murmur2.test.ts).
    expect(CONTRACTS.clickstream.buckets).toBe(32);
    expect(placement.bucket).toBe(27);
    const order = decodeEvent(sampleOrderJson(9, NOW), { contract: 'orders', now: NOW });
    if (!order.ok) throw new Error('fixture invalid');
    expect(placementOf(CONTRACTS.orders, order.event).key).toBe('order-9');
  });
});
