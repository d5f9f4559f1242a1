import { CHECK_STATUS, type CheckRequest, type CheckResponse, type CheckTarget } from './check-protocol';
import { CHECK_HEADERS } from './contracts-adapter';
import { packBytes, unpackBytes } from './packed';
import { needsCheck, type RouteIssue, type ValidateContracts } from './route';

/**
 * Checks every record of a request (the worker thread's work): the same `contracts.check` the
 * main thread would run, on the same bytes and check headers, for the records routing reads.
 */
export function answerChecks(request: CheckRequest, contracts: ValidateContracts, maxEventBytes: number): CheckResponse {
  const values = unpackBytes(request.values);
  const headerLists = request.headers.map(unpackBytes);
  const status = new Uint8Array(values.length);
  const targetOf = new Int16Array(values.length).fill(-1);
  const targets: CheckTarget[] = [];
  const targetIndex = new Map<string, number>();
  const keys: string[] = [];
  const out: Buffer[] = [];
  const failed: { index: number; contract?: string; issues: RouteIssue[] }[] = [];
  const threw: { index: number; message: string }[] = [];
  for (let i = 0; i < values.length; i++) {
    const value = values[i] ?? null;
    if (!needsCheck({ value }, maxEventBytes)) {
      status[i] = CHECK_STATUS.skipped;
      continue;
    }
    const headers: Record<string, Buffer> = {};
    for (let h = 0; h < CHECK_HEADERS.length; h++) {
      const header = headerLists[h]?.[i];
      if (header !== undefined) headers[CHECK_HEADERS[h]] = header;
    }
    const at = request.receivedAt[i];
    let result: ReturnType<ValidateContracts['check']>;
    try {
      result = contracts.check(value as Buffer, headers, Number.isNaN(at) ? undefined : at);
    } catch (err) {
      status[i] = CHECK_STATUS.threw;
      threw.push({ index: i, message: (err as Error)?.message ?? String(err) });
      continue;
    }
    if (!result.ok) {
      status[i] = CHECK_STATUS.failed;
      failed.push({ index: i, ...(result.contract === undefined ? {} : { contract: result.contract }), issues: result.issues });
      continue;
    }
    status[i] = CHECK_STATUS.ok;
    const target = `${result.contract}\n${result.topic}`;
    let t = targetIndex.get(target);
    if (t === undefined) {
      t = targets.push({ contract: result.contract, topic: result.topic }) - 1;
      targetIndex.set(target, t);
    }
    targetOf[i] = t;
    keys.push(result.key);
    out.push(result.value);
  }
  return { id: request.id, status, targets, targetOf, keys, values: packBytes(out), failed, threw };
}
