import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** Every process's own scratch directory under a scratch root: `sluice-run-<pid>-<start time>`. */
const RUN_DIR = /^sluice-run-(\d+)-(\d+)$/;

/** /proc answered, but not with a start time this process can read. */
const UNKNOWN = 'unknown';

/** What claiming a scratch directory found and removed. */
export interface ScratchClaim {
  /** This process's own directory, created. */
  dir: string;
  /** Directories of processes that are gone, removed, and the bytes they held. */
  swept: { dirs: number; bytes: number };
  /** Directories of gone processes that could not be removed, with the reason (left in place). */
  failed: Array<{ dir: string; error: string }>;
}

/**
 * Creates this process's own scratch directory under `root` and removes those of processes that
 * are gone. A process killed by SIGKILL or the OOM killer leaves its staged rows, Parquet outputs
 * and DuckDB spill behind, and a container restarted in its pod keeps its emptyDir, so they piled
 * up to the volume's limit. A directory belongs to a process by pid and start time (Linux
 * `/proc/<pid>/stat`): a restarted container's pid 1 is not its predecessor's. Off Linux nothing
 * is swept. `root` must not be shared with processes in another pid namespace (another container
 * or host), whose pids mean nothing here.
 */
export async function claimScratchDir(root: string, pid = process.pid): Promise<ScratchClaim> {
  await fs.mkdir(root, { recursive: true });
  const start = await processStart(pid);
  const dir = path.join(root, `sluice-run-${pid}-${start ?? UNKNOWN}`);
  const swept = { dirs: 0, bytes: 0 };
  const failed: ScratchClaim['failed'] = [];
  if (start !== undefined && start !== UNKNOWN) {
    for (const entry of await fs.readdir(root, { withFileTypes: true })) {
      const match = entry.isDirectory() ? RUN_DIR.exec(entry.name) : null;
      if (match === null) continue;
      // Gone: no such pid, or that pid is a later process. Any other answer from /proc (hidepid,
      // EMFILE) keeps the directory.
      const now = await processStart(Number(match[1]));
      if (now === match[2] || now === UNKNOWN) continue;
      const gone = path.join(root, entry.name);
      try {
        const bytes = await bytesUnder(gone);
        await fs.rm(gone, { recursive: true, force: true });
        swept.bytes += bytes;
        swept.dirs += 1;
      } catch (err) {
        failed.push({ dir: gone, error: (err as Error).message });
      }
    }
  }
  await fs.mkdir(dir, { recursive: true });
  return { dir, swept, failed };
}

/**
 * A process's start time in clock ticks since boot; undefined when it does not exist (or off
 * Linux, where /proc is absent); UNKNOWN when /proc would not say.
 */
async function processStart(pid: number): Promise<string | undefined> {
  try {
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the command (field 2) may hold spaces and parentheses, so count after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? UNKNOWN;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : UNKNOWN;
  }
}

async function bytesUnder(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile()) bytes += await fs.stat(path.join(entry.parentPath, entry.name)).then((s) => s.size, () => 0);
  }
  return bytes;
}
