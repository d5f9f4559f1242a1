/**
 * cgroup v1 reports "no limit" as a page-rounded 2^63 − 1; anything this large is no limit.
 * (2^60 bytes is an exbibyte, beyond any real container.)
 */
const UNLIMITED_FROM = 2 ** 60;

/**
 * The memory limit in bytes from the text of a cgroup v2 `memory.max` or v1
 * `memory.limit_in_bytes` file, or undefined when the text says there is none ("max", a v1
 * near-2^63 value) or is not a number. Libraries such as DuckDB size themselves from the machine's
 * memory, not the container's: a process reads this to bound them like the pod.
 */
export function parseCgroupMemoryLimit(text: string | undefined): number | undefined {
  const t = text?.trim();
  if (t === undefined || !/^\d+$/.test(t)) return undefined;
  const bytes = Number(t);
  return bytes > 0 && bytes < UNLIMITED_FROM ? bytes : undefined;
}
