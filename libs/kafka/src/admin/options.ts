import type { ConnectionOptions } from '../connection';

/** Admin client settings. */
export interface AdminOptions extends ConnectionOptions {
  /** Timeout of each admin request, ms; default 10 000. */
  requestTimeoutMs?: number;
}
