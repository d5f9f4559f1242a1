/**
 * What is left of `timeoutMs` since `started` (a `performance.now()` reading), at least 1 ms, so
 * a read handed on after its deadline still gets a deadline rather than none; undefined without
 * a timeout. One rule for every step that passes a read's deadline on (the query's slot, its
 * turn in a table's read budget, its retry after an evicted file).
 */
export function timeLeft(timeoutMs: number | undefined, started: number): number | undefined {
  return timeoutMs === undefined ? undefined : Math.max(1, Math.ceil(timeoutMs - (performance.now() - started)));
}
