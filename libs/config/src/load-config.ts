import { SluiceError } from '@sluice/errors';
import type { FieldSpec } from './fields';
import { unknownSettings } from './unknown-settings';

export type ConfigSchema = Record<string, FieldSpec<unknown>>;
export type ConfigOf<S extends ConfigSchema> = { readonly [K in keyof S]: S[K] extends FieldSpec<infer T> ? T : never };

/** A rule over several fields: the fields it reads, and what is wrong with them, or undefined. */
export interface ConfigCheck<S extends ConfigSchema> {
  readonly fields: readonly (keyof S & string)[];
  problem(config: ConfigOf<S>): string | undefined;
}

/**
 * Two fields that mean nothing alone (an access key id and its secret): both set or both empty.
 * With one of them set, the other would silently fall back to a default.
 */
export function setTogether<S extends ConfigSchema>(schema: S, a: keyof S & string, b: keyof S & string): ConfigCheck<S> {
  return {
    fields: [a, b],
    problem(config) {
      const values = config as Record<string, unknown>;
      const isSet = (key: string) => values[key] !== '' && values[key] !== undefined;
      return isSet(a) === isSet(b) ? undefined : `${schema[a].env} and ${schema[b].env} must be set together (${isSet(a) ? schema[b].env : schema[a].env} is empty)`;
    },
  };
}

/** What {@link loadConfig} checks beyond the schema's own fields. */
export interface LoadOptions<S extends ConfigSchema> {
  /** Rules over several fields. */
  readonly checks?: readonly ConfigCheck<S>[];
  /**
   * The service's own variable prefixes (`INGEST_`): a variable under one of them that is a typo
   * of an unset field's name is a problem (see {@link unknownSettings}).
   */
  readonly prefixes?: readonly string[];
}

/**
 * Reads every field of `schema` from `env`, reports all problems at once (CONFIG_INVALID with
 * `details.problems`), and returns a frozen object. Secrets never appear in messages. Each check
 * runs when the fields it reads have parsed (a check over a field already reported would only
 * repeat it).
 */
export function loadConfig<S extends ConfigSchema>(schema: S, env: Record<string, string | undefined>, options: LoadOptions<S> = {}): ConfigOf<S> {
  const { checks = [], prefixes = [] } = options;
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const unknown of unknownSettings(schema, env, prefixes)) {
    if (unknown.typoOf !== undefined) problems.push(`${unknown.name} is not a setting; did you mean ${unknown.typoOf} (unset)?`);
  }
  const invalid = new Set<string>();
  for (const [key, spec] of Object.entries(schema)) {
    const raw = env[spec.env];
    if (raw === undefined || raw === '') {
      if (spec.default === undefined) {
        problems.push(`${spec.env} is required${spec.doc ? ` (${spec.doc})` : ''}`);
        invalid.add(key);
      } else out[key] = spec.default;
      continue;
    }
    const parsed = spec.parse(raw);
    if (parsed.ok) out[key] = parsed.value;
    else {
      problems.push(`${spec.env} ${spec.secret && !parsed.secretSafe ? 'is invalid' : parsed.message}`);
      invalid.add(key);
    }
  }
  for (const check of checks) {
    if (check.fields.some((f) => invalid.has(f))) continue;
    const problem = check.problem(out as ConfigOf<S>);
    if (problem !== undefined) problems.push(problem);
  }
  if (problems.length > 0) {
    throw new SluiceError('CONFIG_INVALID', `invalid configuration:\n  - ${problems.join('\n  - ')}`, {
      details: { problems },
    });
  }
  return deepFreeze(out) as ConfigOf<S>;
}

/** The config with secrets replaced by "***", for start-up logs. */
export function describeConfig<S extends ConfigSchema>(schema: S, config: ConfigOf<S>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    out[key] = spec.secret ? '***' : (config as Record<string, unknown>)[key];
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}
