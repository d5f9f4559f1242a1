import type { Logger } from './logger';

/**
 * Ends the process after a fatal line even when a native call holds a libuv worker thread
 * forever (a hung Kafka client call). `process.exit()` joins the worker threads first, so it
 * would hang as well — seen: validate logged its fatal error and then stayed up, idle, for good.
 * A SIGKILL to itself cannot be held up; the supervisor sees the kill and starts a fresh
 * instance. The log is flushed first (bounded to one second).
 */
export function hardExit(logger: Pick<Logger, 'flush'>, kill: () => void = () => process.kill(process.pid, 'SIGKILL')): void {
  setTimeout(kill, 1_000);
  logger.flush(() => kill());
}

/**
 * Checks `live` every 5 s; once it is false, logs `message` at fatal with `details()` and ends
 * the process with {@link hardExit} (a hung client call would keep a normal exit waiting).
 */
export function exitWhenNotLive(logger: Pick<Logger, 'fatal' | 'flush'>, live: () => boolean, message: string, details: () => object): void {
  setInterval(() => {
    if (live()) return;
    logger.fatal(details(), message);
    hardExit(logger);
  }, 5_000).unref();
}
