import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, ROOT_CONTEXT, context } from '@opentelemetry/api';

// The same idea as @opentelemetry/context-async-hooks (not installed here): the active context
// follows async continuations through AsyncLocalStorage, so a span started in a handler is the
// parent of spans and log lines produced while awaiting inside it.
class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    const bound = (...args: unknown[]) => this.with(ctx, () => fn(...args));
    return bound as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

let registered = false;

/**
 * Installs the AsyncLocalStorage context manager as the global one, once per process. When
 * another manager is already global (a host registered its own) that one is kept.
 */
export function ensureContextManager(): void {
  if (registered) return;
  context.setGlobalContextManager(new AsyncLocalContextManager());
  registered = true;
}
