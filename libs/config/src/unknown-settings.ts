import type { ConfigSchema } from './load-config';

/** A variable under a service's own prefix that no field reads, and the known name nearest to it. */
export interface UnknownSetting {
  readonly name: string;
  /** An unset known name this one is a typo of: at most {@link TYPO_DISTANCE} edits away, or it without its unit. */
  readonly typoOf?: string;
}

/** Edits (insert, delete, replace a character) between a set name and an unset known name that make it a typo. */
export const TYPO_DISTANCE = 2;

/** Units a name ends in; a set name that lacks one of an unset name's (`…_RETENTION` for `…_RETENTION_MS`) is a typo of it. */
const UNIT_SUFFIXES = ['_MS', '_BYTES', '_MB', '_SECONDS', '_PERCENT'];

/**
 * Variables Kubernetes injects for every Service in the namespace (`<SERVICE>_SERVICE_HOST`,
 * `<SERVICE>_PORT=tcp://…`, `<SERVICE>_PORT_8080_TCP_ADDR`, …). A Service named `sluice-…` puts
 * them under `SLUICE_`; they are not settings of ours, so they are never reported. The manifests
 * turn them off (`enableServiceLinks: false`); another deployment may not.
 */
const SERVICE_LINK = /_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)$/;
const SERVICE_LINK_PORT = /^(tcp|udp|sctp):\/\//;

/**
 * Variables set in `env` under one of `prefixes` that no field of `schema` reads: a misspelt
 * setting would otherwise leave its field at the default without a word. Each names the unset
 * known variable it is a typo of, where there is one.
 */
export function unknownSettings(schema: ConfigSchema, env: Record<string, string | undefined>, prefixes: readonly string[]): UnknownSetting[] {
  const known = new Set(Object.values(schema).map((spec) => spec.env));
  const unset = [...known].filter((name) => env[name] === undefined || env[name] === '');
  const out: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (known.has(name) || !prefixes.some((p) => name.startsWith(p))) continue;
    if (SERVICE_LINK.test(name) || (name.endsWith('_PORT') && SERVICE_LINK_PORT.test(env[name] ?? ''))) continue;
    let typoOf = UNIT_SUFFIXES.map((unit) => name + unit).find((candidate) => unset.includes(candidate));
    let nearest = typoOf === undefined ? TYPO_DISTANCE + 1 : 0;
    for (const candidate of unset) {
      const distance = editDistance(name, candidate);
      if (distance < nearest) [typoOf, nearest] = [candidate, distance];
    }
    out.push(typoOf === undefined ? { name } : { name, typoOf });
  }
  return out;
}

/** Where a service logs at start: a pino logger fits. */
export interface WarningLog {
  warn(fields: object, message: string): void;
}

/**
 * Logs, once at start, the variables under `prefixes` that no setting of `service` reads (a typo of
 * an unset setting has already refused the start in loadConfig); nothing when there are none.
 */
export function warnIgnoredSettings(log: WarningLog, service: string, schema: ConfigSchema, env: Record<string, string | undefined>, prefixes: readonly string[]): void {
  const names = unknownSettings(schema, env, prefixes).map((setting) => setting.name);
  if (names.length > 0) log.warn({ variables: names }, `variables that are not settings of ${service} are ignored`);
}

/** Levenshtein distance between two short strings. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
