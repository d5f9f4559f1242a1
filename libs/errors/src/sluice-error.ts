/**
 * Base class of every error Sluice raises on purpose.
 *
 * `code` is `<AREA>_<CONDITION>` from the owning module's closed catalog; `retryable` decides
 * retry (true) versus dead-letter / client error (false). Fields survive `JSON.stringify`.
 */
export class SluiceError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly retryable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: Code,
    message: string,
    options: { retryable?: boolean; cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SluiceError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      details: this.details,
      cause: describeCause(this.cause),
    };
  }
}

/** True when `err` is a SluiceError, optionally with one of the given codes. */
export function isSluiceError<C extends string>(err: unknown, ...codes: C[]): err is SluiceError<C> {
  return err instanceof SluiceError && (codes.length === 0 || codes.includes(err.code as C));
}

/** True when `err` says retrying the same operation may succeed. Unknown errors are not retryable. */
export function isRetryable(err: unknown): boolean {
  return err instanceof SluiceError && err.retryable;
}

function describeCause(cause: unknown): unknown {
  if (cause === undefined) return undefined;
  if (cause instanceof SluiceError) return cause.toJSON();
  if (cause instanceof Error) return { name: cause.name, message: cause.message };
  return String(cause);
}
