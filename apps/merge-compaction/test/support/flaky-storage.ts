import { SluiceError } from '@sluice/errors';
import type { ListOptions, Storage, StoredObject } from '@sluice/lake';

/**
 * Wraps a real Storage and makes it slow or failing on demand: `latencyMs` delays every call,
 * `failing` makes writes throw a retryable LAKE_STORAGE_UNAVAILABLE (what S3 503s become).
 * Reads keep working, as with a store that accepts no writes. The data still goes to the real
 * store underneath — this is not a fake.
 */
export class FlakyStorage implements Storage {
  static latencyMs = 0;
  static failing = false;
  /** Writes fail only on the tables whose storage URI matches this (with `failing` off). */
  static failingUri: RegExp | undefined;
  static failures = 0;

  constructor(private readonly inner: Storage) {}

  get uri(): string {
    return this.inner.uri;
  }

  private async gate(write: boolean): Promise<void> {
    if (FlakyStorage.latencyMs > 0) await new Promise((r) => setTimeout(r, FlakyStorage.latencyMs));
    if (write && (FlakyStorage.failing || FlakyStorage.failingUri?.test(this.inner.uri))) {
      FlakyStorage.failures += 1;
      throw new SluiceError('LAKE_STORAGE_UNAVAILABLE', `${this.inner.uri}: injected storage failure`, { retryable: true });
    }
  }

  async get(key: string): Promise<Uint8Array> {
    await this.gate(false);
    return this.inner.get(key);
  }
  async getIfExists(key: string): Promise<Uint8Array | undefined> {
    await this.gate(false);
    return this.inner.getIfExists(key);
  }
  async put(key: string, body: Uint8Array): Promise<void> {
    await this.gate(true);
    return this.inner.put(key, body);
  }
  async putFile(key: string, localFile: string): Promise<void> {
    await this.gate(true);
    if (this.inner.putFile) return this.inner.putFile(key, localFile);
    const { readFile } = await import('node:fs/promises');
    return this.inner.put(key, await readFile(localFile));
  }
  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    await this.gate(true);
    return this.inner.putIfAbsent(key, body);
  }
  async list(prefix: string, options?: ListOptions): Promise<StoredObject[]> {
    await this.gate(false);
    return this.inner.list(prefix, options);
  }
  async delete(keys: string[]): Promise<void> {
    await this.gate(true);
    return this.inner.delete(keys);
  }
  async head(key: string): Promise<StoredObject | undefined> {
    await this.gate(false);
    return this.inner.head(key);
  }
  async localPath(key: string): Promise<string> {
    await this.gate(false);
    return this.inner.localPath(key);
  }
}
