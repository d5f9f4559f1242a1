import * as path from 'node:path';
import { SluiceError } from '@sluice/errors';
import { LocalStorage } from './local-storage';
import { S3Storage, parseS3Uri, type S3CommitMode } from './s3-storage';
import type { Storage } from './storage';

/** How to reach tables under an `s3://` lake root. Apps fill it from their config. */
export interface LakeRootS3Options {
  /** Endpoint of an S3-compatible server; AWS when omitted or empty. */
  readonly endpoint?: string;
  readonly region?: string;
  /** Static credentials; the SDK's default provider chain when omitted. */
  readonly credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Directory of the local file cache; each table gets a subdirectory. */
  readonly cacheDir: string;
  /** Bound of each table's local file cache, bytes. */
  readonly cacheBytesPerTable: number;
  readonly commitMode?: S3CommitMode;
}

/** Tables by name under one lake root. */
export type TableStorageFactory = (table: string) => Storage;

/** True for an `s3://` lake root. */
export function isS3Root(root: string): boolean {
  return root.startsWith('s3://');
}

/**
 * The storage of each table under a lake root: `<root>/<table>` as a local directory, or, for
 * `s3://bucket[/prefix]`, the objects under `<prefix>/<table>` with a bounded local file cache
 * per table. An S3 root without `s3` options is LAKE_STORAGE_OPTIONS_INVALID, as is a bad URI.
 */
export function tableStorageFactory(root: string, s3?: LakeRootS3Options): TableStorageFactory {
  if (!isS3Root(root)) {
    const dir = path.resolve(root);
    return (table) => new LocalStorage(path.join(dir, table));
  }
  const { bucket, prefix } = parseS3Uri(root);
  if (s3 === undefined) throw new SluiceError('LAKE_STORAGE_OPTIONS_INVALID', `lake root ${root} is on S3 but no S3 options (cache directory) were given`);
  return (table) =>
    new S3Storage({
      bucket,
      prefix: prefix === '' ? table : `${prefix}/${table}`,
      endpoint: s3.endpoint || undefined,
      region: s3.region,
      credentials: s3.credentials,
      commitMode: s3.commitMode,
      cache: { dir: path.join(s3.cacheDir, table), maxBytes: s3.cacheBytesPerTable },
    });
}
