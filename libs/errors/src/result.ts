/** Outcome of a decoder or validator that never throws on bad input. */
export type Result<T, I = Issue> = { ok: true; value: T } | { ok: false; issues: I[] };

/** One problem found in an input: a machine code, a JSON-pointer-like path and plain words. */
export interface Issue {
  code: string;
  path: string;
  message: string;
}

export const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
export const fail = <I = Issue>(issues: I[]): { ok: false; issues: I[] } => ({ ok: false, issues });
