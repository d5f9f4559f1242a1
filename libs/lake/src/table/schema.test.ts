import { validateProperties, parseInterval } from './properties';
import { duckType, schemaFromColumns } from './schema';

describe('schemas and properties', () => {
  it('maps Delta types to the DuckDB types that write them correctly', () => {
    expect(duckType('timestamp')).toBe('TIMESTAMPTZ');
    expect(duckType('decimal(10,2)')).toBe('DECIMAL(10,2)');
    expect(duckType({ type: 'array', elementType: 'long', containsNull: true })).toBe('BIGINT[]');
    expect(duckType({ type: 'map', keyType: 'string', valueType: 'double', valueContainsNull: true })).toBe('MAP(VARCHAR, DOUBLE)');
  });

  it('refuses names Spark rejects, case-insensitive duplicates and unknown types', () => {
    for (const name of ['a b', 'a,b', 'a;b', 'a{b', 'a(b', 'a=b', 'a\tb', '']) {
      expect(() => schemaFromColumns([{ name, type: 'long' }])).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    }
    expect(() => schemaFromColumns([{ name: 'Id', type: 'long' }, { name: 'id', type: 'long' }])).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(() => schemaFromColumns([{ name: 'a', type: 'decimal(40,2)' as never }])).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(() => schemaFromColumns([{ name: 'a', type: 'timestamp_ntz' as never }])).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(schemaFromColumns([{ name: "it's\"ü\"", type: 'string' }]).fields[0].nullable).toBe(true);
  });

  it('accepts only delta.* properties it honours, in interval form', () => {
    expect(parseInterval('interval 7 days', 'x')).toBe(7 * 86_400_000);
    expect(parseInterval('interval 1 hour', 'x')).toBe(3_600_000);
    expect(() => validateProperties({ 'delta.deletedFileRetentionDuration': '7 days' })).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(() => validateProperties({ 'delta.columnMapping.mode': 'name' })).toThrow(expect.objectContaining({ code: 'LAKE_UNSUPPORTED_PROTOCOL' }));
    expect(() => validateProperties({ 'delta.checkpointInterval': '0' })).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
    expect(() => validateProperties({ 'delta.appendOnly': 'true', 'sluice.owner': 'anything' })).not.toThrow();
  });
});
