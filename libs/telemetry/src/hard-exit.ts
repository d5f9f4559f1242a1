import type { Logger } from './logger';

/** What {@link hardExit} flushes: the log, and the spans still buffered (`Telemetry`). */
export interface ExitFlush {
  readonly logger: Pick<Logger, 'flush'>;
  /** Exports buffered spans (`Telemetry.flush`); a stuck process's last spans say what it was doing. */
  flush(): Promise<void>;
}

/**
 * Ends the process after a fatal line even when a native call holds a libuv worker thread
 * forever (a hung Kafka client call). `process.exit()` joins the worker threads first, so it
 * would hang as well — seen: validate logged its fatal error and then stayed up, idle, for good.
 * A SIGKILL to itself cannot be held up; the supervisor sees the kill and starts a fresh
 * instance. The log and the buffered spans are flushed first, together bounded to one second.
 */
export function hardExit(telemetry: ExitFlush, kill: () => void = () => process.kill(process.pid, 'SIGKILL')): void {
  setTimeout(kill, 1_000);
  const logged = new Promise<void>((resolve) => telemetry.logger.flush(() => resolve()));
  const exported = telemetry.flush().catch(() => undefined);
  void Promise.all([logged, exported]).then(kill);
}

/**
 * Checks `live` every 5 s; once it is false, logs `message` at fatal with `details()` and ends
 * the process with {@link hardExit} (a hung client call would keep a normal exit waiting).
 */
export function exitWhenNotLive(telemetry: ExitFlush & { readonly logger: Pick<Logger, 'fatal'> }, live: () => boolean, message: string, details: () => object): void {
  setInterval(() => {
    if (live()) return;
    telemetry.logger.fatal(details(), message);
    hardExit(telemetry);
  }, 5_000).unref();
}
