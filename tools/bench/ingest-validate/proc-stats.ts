import { readFileSync } from 'node:fs';

/** CPU time (user+system, seconds) and RSS (bytes) of a process, read from /proc. */
export function sampleProcess(pid: number): { cpuSeconds: number; rssBytes: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { cpuSeconds: ticks / 100, rssBytes: rssKb * 1024 };
}

/** Samples a process every `intervalMs` until stopped; reports CPU % over the window and peak RSS. */
export function watchProcess(pid: number, intervalMs = 250): { stop(): { cpuPercent: number; peakRssMb: number; seconds: number } } {
  const start = sampleProcess(pid);
  const startedAt = performance.now();
  let peak = start.rssBytes;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, sampleProcess(pid).rssBytes);
    } catch {
      // The process ended; the last sample stands.
    }
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      const end = sampleProcess(pid);
      const seconds = (performance.now() - startedAt) / 1000;
      peak = Math.max(peak, end.rssBytes);
      return { cpuPercent: (100 * (end.cpuSeconds - start.cpuSeconds)) / seconds, peakRssMb: peak / 1024 / 1024, seconds };
    },
  };
}
