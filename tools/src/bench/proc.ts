import { readFileSync } from 'node:fs';

/** CPU time and memory of one process, read from /proc. */
export interface ProcSample {
  /** user + system CPU time, seconds. */
  readonly cpuSeconds: number;
  /** Resident set size, bytes. */
  readonly rssBytes: number;
  /** The process's peak resident set size so far (VmHWM), bytes: peaks between samples included. */
  readonly peakRssBytes: number;
}

const TICKS_PER_SECOND = 100;

/** One sample of `pid`, or undefined when the process is gone. */
export function sampleProc(pid: number): ProcSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    const peakKb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? rssKb);
    return { cpuSeconds: ticks / TICKS_PER_SECOND, rssBytes: rssKb * 1024, peakRssBytes: peakKb * 1024 };
  } catch {
    return undefined;
  }
}

/** CPU % (100 = one core) and RSS per process between two sample rounds. */
export class ProcWatcher {
  private last = new Map<number, { at: number; s: ProcSample }>();
  /** Per name: CPU seconds and wall seconds between samples of the same pid (a restart starts over). */
  private readonly busy = new Map<string, { cpuSeconds: number; wallSeconds: number }>();

  /** Samples every pid; returns CPU % since the previous call for that pid (0 on the first) and RSS in MiB. */
  sample(pids: Readonly<Record<string, number>>): Record<string, { cpuPercent: number; rssMiB: number; peakRssMiB: number }> {
    const out: Record<string, { cpuPercent: number; rssMiB: number; peakRssMiB: number }> = {};
    const now = performance.now();
    for (const [name, pid] of Object.entries(pids)) {
      const s = sampleProc(pid);
      if (!s) continue;
      const prev = this.last.get(pid);
      const cpuSeconds = prev ? s.cpuSeconds - prev.s.cpuSeconds : 0;
      const wallSeconds = prev ? (now - prev.at) / 1000 : 0;
      const cpuPercent = wallSeconds > 0 ? (100 * cpuSeconds) / wallSeconds : 0;
      if (prev) {
        const b = this.busy.get(name) ?? { cpuSeconds: 0, wallSeconds: 0 };
        this.busy.set(name, { cpuSeconds: b.cpuSeconds + cpuSeconds, wallSeconds: b.wallSeconds + wallSeconds });
      }
      this.last.set(pid, { at: now, s });
      out[name] = { cpuPercent: Math.round(cpuPercent * 10) / 10, rssMiB: Math.round((s.rssBytes / 1048576) * 10) / 10, peakRssMiB: Math.round((s.peakRssBytes / 1048576) * 10) / 10 };
    }
    return out;
  }

  /** Average CPU % per name over the time it was watched: CPU seconds over wall seconds, not a mean of samples. */
  averageCpuPercent(): Record<string, number> {
    return Object.fromEntries([...this.busy].map(([name, b]) => [name, b.wallSeconds > 0 ? (100 * b.cpuSeconds) / b.wallSeconds : 0]));
  }
}
