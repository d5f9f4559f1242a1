import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage, lakeError } from '../errors';
import type { ListOptions, Storage, StoredObject } from './storage';

/**
 * Storage in a local directory (the embedded default). Commits are put-if-absent by writing a
 * temporary file and `link()`ing it to the final name: link fails atomically with EEXIST, so two
 * writers never both win a version and no reader sees a partial file (DELTA.md §6).
 *
 * Durable: every file is fsynced before it gets its final name, and its directory after, so a
 * power loss leaves no empty or torn `N.json` (put-if-absent would then refuse that version for
 * good) and no commit naming a data file that never reached the disk.
 */
export class LocalStorage implements Storage {
  readonly uri: string;
  /** Absolute root directory of the table. */
  readonly root: string;

  /** Directories under the root whose entry in their parent this handle has synced. */
  private readonly durableDirs = new Set<string>();

  constructor(root: string) {
    this.root = path.resolve(root);
    this.uri = pathToFileURL(this.root).href;
  }

  async get(key: string): Promise<Uint8Array> {
    const body = await this.getIfExists(key);
    if (body === undefined) throw lakeError('LAKE_NOT_FOUND', `${this.uri}/${key} does not exist`, { details: { key } });
    return body;
  }

  async getIfExists(key: string): Promise<Uint8Array | undefined> {
    try {
      return await fs.readFile(this.file(key));
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw storageError('read', key, err);
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const final = this.file(key);
    const tmp = this.tempNameFor(final);
    try {
      await this.ensureDir(path.dirname(final));
      await writeSynced(tmp, body);
      await fs.rename(tmp, final);
      await syncPath(path.dirname(final));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw storageError('write', key, err);
    }
  }

  /**
   * Creates `dir` (under the root) and its missing parents, and makes every directory from `dir`
   * up to the root durable in its parent before a file in it is committed: also those another
   * writer created, which mkdir does not report and which that writer may not have synced yet
   * (a crash then could lose a committed file with its directory). Synced once per directory by
   * this handle, and again when this call made it anew (it was removed: a table created again).
   * Directories above the root are synced when this call created them.
   */
  private async ensureDir(dir: string): Promise<void> {
    const created = await fs.mkdir(dir, { recursive: true });
    // Deepest first; a durable directory's parents up to the root are durable too, so each is
    // remembered only once its whole chain is synced.
    const synced: string[] = [];
    for (let d = dir; ; d = path.dirname(d)) {
      const madeNow = created !== undefined && isAtOrAbove(created, d);
      if (!madeNow && this.durableDirs.has(d)) break;
      await syncPath(path.dirname(d));
      synced.push(d);
      if (d === this.root || path.dirname(d) === d) break;
    }
    for (const d of synced) this.durableDirs.add(d);
    if (created === undefined || created === this.root || !isAtOrAbove(created, this.root)) return;
    for (let d = path.dirname(this.root); ; d = path.dirname(d)) {
      await syncPath(path.dirname(d));
      if (d === created || path.dirname(d) === d) break;
    }
  }

  /**
   * Moves a local file into the table under `key` (rename when on the same filesystem, copy
   * otherwise). Lets DuckDB write Parquet once instead of buffering it in memory.
   */
  async putFile(key: string, localFile: string): Promise<void> {
    const final = this.file(key);
    try {
      await this.ensureDir(path.dirname(final));
      await syncPath(localFile);
      try {
        await fs.rename(localFile, final);
      } catch (err) {
        if (!isErrno(err, 'EXDEV')) throw err;
        const tmp = this.tempNameFor(final);
        await fs.copyFile(localFile, tmp);
        await syncPath(tmp);
        await fs.rename(tmp, final);
        await fs.rm(localFile, { force: true });
      }
      await syncPath(path.dirname(final));
    } catch (err) {
      throw storageError('write', key, err);
    }
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const final = this.file(key);
    const tmp = this.tempNameFor(final);
    try {
      await this.ensureDir(path.dirname(final));
      await writeSynced(tmp, body);
      try {
        await fs.link(tmp, final);
        await syncPath(path.dirname(final));
        return true;
      } catch (err) {
        if (isErrno(err, 'EEXIST')) return false;
        throw err;
      }
    } catch (err) {
      throw storageError('write', key, err);
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<StoredObject[]> {
    const found: { key: string; file: string }[] = [];
    await this.walk(this.root, '', prefix, options.exclude ?? [], found);
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const out: StoredObject[] = [];
    const limit = options.limit ?? Infinity;
    // Only the keys returned are stat'ed: the first of a long log costs one stat, not one per file.
    for (const { key, file } of found) {
      if (out.length >= limit) break;
      if (options.startAfter !== undefined && key <= options.startAfter) continue;
      let st;
      try {
        st = await fs.stat(file);
      } catch (err) {
        if (isErrno(err, 'ENOENT')) continue; // deleted while listing
        throw storageError('stat', key, err);
      }
      out.push({ key, size: st.size, modifiedMs: Math.floor(st.mtimeMs) });
    }
    return out;
  }

  async delete(keys: string[]): Promise<void> {
    for (const key of keys) {
      try {
        await fs.rm(this.file(key), { force: true });
      } catch (err) {
        throw storageError('delete', key, err);
      }
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const st = await fs.stat(this.file(key));
      if (!st.isFile()) return undefined;
      return { key, size: st.size, modifiedMs: Math.floor(st.mtimeMs) };
    } catch (err) {
      if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return undefined;
      throw storageError('stat', key, err);
    }
  }

  async localPath(key: string): Promise<string> {
    return this.file(key);
  }

  private file(key: string): string {
    if (key.split('/').some((part) => part === '..')) {
      throw lakeError('LAKE_INVALID_INPUT', `storage key must not contain '..': ${JSON.stringify(key)}`);
    }
    return path.join(this.root, ...key.split('/'));
  }

  private tempNameFor(final: string): string {
    // Starts with '.', so readers and vacuum's orphan scan ignore it if a crash leaves it behind.
    return path.join(path.dirname(final), `.${path.basename(final)}.${randomUUID()}.tmp`);
  }

  /**
   * Collects the files under `dir` whose keys start with `prefix` and with none of `exclude`,
   * descending only into directories that may hold some.
   */
  private async walk(dir: string, dirKey: string, prefix: string, exclude: readonly string[], out: { key: string; file: string }[]): Promise<void> {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return;
      throw storageError('list', dirKey, err);
    }
    for (const entry of entries) {
      const key = dirKey + entry.name;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        const sub = key + '/';
        if ((sub.startsWith(prefix) || prefix.startsWith(sub)) && !isUnder(sub, exclude)) await this.walk(full, sub, prefix, exclude, out);
      } else if (entry.isFile() && key.startsWith(prefix) && !isUnder(key, exclude)) {
        out.push({ key, file: full });
      }
    }
  }
}

function isUnder(key: string, prefixes: readonly string[]): boolean {
  return prefixes.some((p) => key.startsWith(p));
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

function storageError(op: string, key: string, cause: unknown) {
  return lakeError('LAKE_STORAGE_UNAVAILABLE', `local storage ${op} failed for ${key}: ${errorMessage(cause)}`, {
    cause,
    details: { key, op },
  });
}

/** Writes `body` to `file` and flushes it to the disk. */
async function writeSynced(file: string, body: Uint8Array): Promise<void> {
  const handle = await fs.open(file, 'w');
  try {
    await handle.writeFile(body);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Flushes a file someone else wrote (DuckDB's Parquet output), or a directory's entries (a new
 * name in it), to the disk.
 */
async function syncPath(fileOrDir: string): Promise<void> {
  const handle = await fs.open(fileOrDir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Whether `dir` is `of` or one of its ancestors. */
function isAtOrAbove(dir: string, of: string): boolean {
  const rel = path.relative(dir, of);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
