/** The three jobs one merge-compaction process can run; any subset, all by default (embedded). */
export const ROLES = ['tier1', 'tier2', 'compaction'] as const;
/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];

/**
 * Parses `SLUICE_ROLES` items into a set. Unknown words, and an empty list, are reported rather
 * than ignored: a typo must not silently start a process that does nothing.
 */
export function parseRoles(items: readonly string[]): { ok: true; value: ReadonlySet<Role> } | { ok: false; message: string } {
  const out = new Set<Role>();
  const unknown: string[] = [];
  for (const raw of items) {
    const item = raw.trim();
    if ((ROLES as readonly string[]).includes(item)) out.add(item as Role);
    else unknown.push(item);
  }
  if (unknown.length > 0) return { ok: false, message: `unknown role(s) ${unknown.join(', ')}; expected ${ROLES.join(', ')}` };
  if (out.size === 0) return { ok: false, message: `must list at least one of ${ROLES.join(', ')}` };
  return { ok: true, value: out };
}
