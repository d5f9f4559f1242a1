import { validateProperties, parseInterval, parquetLayoutOf } from './properties';
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

  it('sluice.parquet.rowGroupRows: whole 2,048-row vectors at create; a bad value set by another writer is ignored, not fatal', () => {
    const k = 'sluice.parquet.rowGroupRows';
    expect(() => validateProperties({ [k]: '8192' })).not.toThrow();
    for (const bad of ['0', '1000', '-2048', '4096.5', '08192', 'x', '99999999999999999999']) {
      expect(() => validateProperties({ [k]: bad })).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
      expect(parquetLayoutOf({ [k]: bad }).rowGroupRows).toBeUndefined();
    }
    expect(parquetLayoutOf({ [k]: '8192' }).rowGroupRows).toBe(8192);
    expect(parquetLayoutOf({}).rowGroupRows).toBeUndefined();
  });

  it('sluice.parquet.compression: a codec every Delta reader reads; snappy by default and for a value another writer set badly', () => {
    const k = 'sluice.parquet.compression';
    for (const codec of ['snappy', 'uncompressed', 'zstd', 'gzip']) {
      expect(() => validateProperties({ [k]: codec })).not.toThrow();
      expect(parquetLayoutOf({ [k]: codec }).codec).toBe(codec);
    }
    for (const bad of ['SNAPPY', 'lz4', 'brotli', 'none', '', 'snappy; DROP TABLE t']) {
      expect(() => validateProperties({ [k]: bad })).toThrow(expect.objectContaining({ code: 'LAKE_SCHEMA_INVALID' }));
      expect(parquetLayoutOf({ [k]: bad }).codec).toBe('snappy');
    }
    expect(parquetLayoutOf({})).toEqual({ rowGroupRows: undefined, codec: 'snappy' });
  });
});
