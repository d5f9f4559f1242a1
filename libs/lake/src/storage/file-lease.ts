import { AsyncLocalStorage } from 'node:async_hooks';

/** What a lease holds: a cache that can keep one of its files from eviction. */
export interface PinnableCache {
  pin(name: string): void;
  unpin(name: string): void;
}

const scope = new AsyncLocalStorage<FileLease>();

/**
 * Keeps the local files a read is handed from being evicted until the read is done. A bounded
 * file cache (S3 objects copied to local disk for DuckDB) evicts the least recently used file
 * when it fills; a query handed more files than the cache holds saw its first files evicted
 * before DuckDB opened them, and failed as if they had been vacuumed. Every cache file handed
 * out inside {@link run} is pinned until {@link release}; past the bound, the cache grows by
 * what running reads hold and shrinks again at the next insertion after they end.
 */
export class FileLease {
  private readonly held: { cache: PinnableCache; name: string }[] = [];
  private released = false;

  /** Runs `fn` in a lease of its own, released when `fn` settles (a read that ends with its call). */
  static async holding<T>(fn: () => Promise<T>): Promise<T> {
    const lease = new FileLease();
    try {
      return await lease.run(fn);
    } finally {
      lease.release();
    }
  }

  /** The lease of the current async context, if a read runs inside one. */
  static current(): FileLease | undefined {
    return scope.getStore();
  }

  /** Runs `fn`; cache files it is handed stay until {@link release}. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return scope.run(this, fn);
  }

  /** Pins `name` in `cache` for as long as the lease lasts (at once, if already released). */
  hold(cache: PinnableCache, name: string): void {
    if (this.released) return;
    cache.pin(name);
    this.held.push({ cache, name });
  }

  /** Unpins everything held. Idempotent. */
  release(): void {
    this.released = true;
    for (const { cache, name } of this.held.splice(0)) cache.unpin(name);
  }
}
