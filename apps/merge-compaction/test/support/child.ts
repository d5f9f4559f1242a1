import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import * as path from 'node:path';

/** Workspace root (where tsconfig.base.json's path aliases resolve). */
export const ROOT = path.resolve(__dirname, '../../../..');

/** A merge-compaction process started the way production starts it (node + tsx on main.ts). */
export class ChildService {
  readonly process: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: Record<string, string>, logFile: string) {
    const log = createWriteStream(logFile, { flags: 'a' });
    this.process = spawn(process.execPath, ['--import', 'tsx', 'apps/merge-compaction/src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.process.stdout?.pipe(log);
    this.process.stderr?.pipe(log);
    this.exited = new Promise((resolve) => this.process.once('exit', (code, signal) => resolve({ code, signal })));
  }

  kill(signal: NodeJS.Signals): void {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill(signal);
  }
}

/** GET `url` and return the status, or 0 when nothing answers. */
export async function status(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}
