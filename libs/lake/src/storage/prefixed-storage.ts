import type { ListOptions, Storage, StoredObject } from './storage';

/** A view of another storage under a key prefix (e.g. a sidecar table inside a table root). */
export class PrefixedStorage implements Storage {
  readonly uri: string;
  constructor(
    private readonly inner: Storage,
    /** Ends with '/'. */
    private readonly prefix: string,
  ) {
    this.uri = `${inner.uri.replace(/\/$/, '')}/${prefix.replace(/\/$/, '')}`;
    if (inner.putFile) this.putFile = (key, file) => inner.putFile!(prefix + key, file);
  }
  putFile?: (key: string, localFile: string) => Promise<void>;
  get(key: string): Promise<Uint8Array> {
    return this.inner.get(this.prefix + key);
  }
  getIfExists(key: string): Promise<Uint8Array | undefined> {
    return this.inner.getIfExists(this.prefix + key);
  }
  put(key: string, body: Uint8Array): Promise<void> {
    return this.inner.put(this.prefix + key, body);
  }
  putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    return this.inner.putIfAbsent(this.prefix + key, body);
  }
  async list(prefix: string, options: ListOptions = {}): Promise<StoredObject[]> {
    const exclude = options.exclude?.map((p) => this.prefix + p);
    const startAfter = options.startAfter === undefined ? undefined : this.prefix + options.startAfter;
    const found = await this.inner.list(this.prefix + prefix, { ...options, exclude, startAfter });
    return found.map((o) => ({ ...o, key: o.key.slice(this.prefix.length) }));
  }
  delete(keys: string[]): Promise<void> {
    return this.inner.delete(keys.map((k) => this.prefix + k));
  }
  async head(key: string): Promise<StoredObject | undefined> {
    const o = await this.inner.head(this.prefix + key);
    return o && { ...o, key };
  }
  localPath(key: string): Promise<string> {
    return this.inner.localPath(this.prefix + key);
  }
}
