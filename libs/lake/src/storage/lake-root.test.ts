import * as path from 'node:path';
import { LocalStorage } from './local-storage';
import { S3Storage } from './s3-storage';
import { isS3Root, tableStorageFactory } from './lake-root';

describe('tableStorageFactory', () => {
  it('puts each table in a subdirectory of a local root', () => {
    const storage = tableStorageFactory('some/lake')('silver_orders');
    expect(storage).toBeInstanceOf(LocalStorage);
    expect(storage.uri).toContain(path.join(path.resolve('some/lake'), 'silver_orders'));
  });

  it('puts each table under the prefix of an s3:// root, with its own cache directory', () => {
    const factory = tableStorageFactory('s3://sluice-lake/tables/', { endpoint: 'http://127.0.0.1:1', cacheDir: '/tmp/c', cacheBytesPerTable: 1 << 20 });
    const storage = factory('silver_orders');
    expect(storage).toBeInstanceOf(S3Storage);
    expect(storage.uri).toBe('s3://sluice-lake/tables/silver_orders');
    expect((storage as S3Storage).cache).not.toBe((factory('bronze_orders') as S3Storage).cache);
    expect(tableStorageFactory('s3://sluice-lake', { cacheDir: '/tmp/c', cacheBytesPerTable: 1 << 20 })('t').uri).toBe('s3://sluice-lake/t');
  });

  it('refuses an s3:// root without S3 options or with an invalid bucket', () => {
    expect(() => tableStorageFactory('s3://sluice-lake/tables')).toThrow(expect.objectContaining({ code: 'LAKE_STORAGE_OPTIONS_INVALID' }));
    expect(() => tableStorageFactory('s3://Bad_Bucket/x', { cacheDir: '/tmp/c', cacheBytesPerTable: 1 << 20 })).toThrow(expect.objectContaining({ code: 'LAKE_STORAGE_OPTIONS_INVALID' }));
  });

  it('tells an s3:// root from a directory', () => {
    expect(isS3Root('s3://b/p')).toBe(true);
    expect(isS3Root('/data/lake')).toBe(false);
    expect(isS3Root('s3:/b')).toBe(false);
  });
});
