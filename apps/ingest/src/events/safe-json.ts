/**
 * JSON.parse itself is safe against prototype pollution (it defines `__proto__` as an own key),
 * but every later `{...event}` or Object.assign by a consumer is not. Such keys are refused at
 * the edge. Depth is bounded by the caller before this walk, so recursion here is bounded too.
 */
export function findForbiddenKey(value: unknown, path = ''): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findForbiddenKey(value[i], `${path}/${i}`);
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const child = (value as Record<string, unknown>)[key];
    if (key === '__proto__' || key === 'prototype') return `${path}/${key}`;
    if (key === 'constructor' && child !== null && typeof child === 'object') return `${path}/${key}`;
    const found = findForbiddenKey(child, `${path}/${key}`);
    if (found) return found;
  }
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON.parse that returns a result instead of throwing. Invalid UTF-8 is refused rather than
 * silently replaced, because the bytes go to Kafka as they came.
 */
export function parseJson(bytes: Buffer): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(utf8.decode(bytes)) };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
}
