import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { validateError } from '../errors';
import { CHECK_STATUS, type CheckRefusal, type CheckRequest, type CheckResponse, type CheckWorkerSettings, type LearnedSchema } from './check-protocol';
import { CHECK_HEADERS } from './contracts-adapter';
import { packBytes, transferablesOf, unpackBytes } from './packed';
import type { CheckResult, RawMessage } from './route';

/** A record's check: the contracts' answer, what the check threw, or null when routing does not read it. */
export type CheckOutcome = CheckResult | { readonly threw: string } | null;

/**
 * Runs the contracts' checks of whole batches in a worker thread. The values and check headers
 * cross as packed transferable arrays, the answers come back the same way; a valid record's Avro
 * value is a Buffer over the answer's memory. A worker that fails (or exits) fails the requests
 * it held with VALIDATE_CHECK_WORKER_FAILED (retryable: the batch is aborted and retried); the
 * next request starts a new one, taught every schema id learned so far.
 */
export class WorkerChecks {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, { resolve: (r: CheckResponse) => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  /** How many of `learned()` the current worker was given. */
  private learnedSent = 0;
  private closed = false;

  constructor(
    private readonly settings: CheckWorkerSettings,
    /** Every schema id learned from the registry so far, in the order learned. */
    private readonly learned: () => readonly LearnedSchema[] = () => [],
  ) {}

  /** Checks `messages` as of `now`: one outcome per message, in order. */
  async check(messages: readonly RawMessage[], now: number): Promise<CheckOutcome[]> {
    if (messages.length === 0) return [];
    if (this.closed) throw validateError('VALIDATE_CHECK_WORKER_FAILED', { reason: 'closed' });
    const worker = this.running();
    const learned = this.learned();
    const request: CheckRequest = {
      id: this.nextId++,
      now,
      values: packBytes(messages.map((m) => m.value)),
      headers: CHECK_HEADERS.map((name) => packBytes(messages.map((m) => m.headers[name]))),
      receivedAt: Float64Array.from(messages, (m) => m.timestamp ?? Number.NaN),
      learned: learned.slice(this.learnedSent),
    };
    const answered = new Promise<CheckResponse>((resolve, reject) => this.waiting.set(request.id, { resolve, reject }));
    try {
      worker.postMessage(request, [...transferablesOf(request.values, ...request.headers), request.receivedAt.buffer]);
    } catch (err) {
      this.waiting.delete(request.id);
      throw validateError('VALIDATE_CHECK_WORKER_FAILED', { reason: 'the request could not be sent' }, err);
    }
    // Counted as taught only once sent (a refused request ends the worker: the next one is taught all).
    this.learnedSent = learned.length;
    return outcomesOf(await answered);
  }

  /** Stops the worker; requests it held fail. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(validateError('VALIDATE_CHECK_WORKER_FAILED', { reason: 'closed' }));
    await worker?.terminate();
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const { file, execArgv } = workerFile();
    const worker = new Worker(file, { workerData: this.settings, ...(execArgv ? { execArgv } : {}) });
    // Never what keeps the process alive: close() ends it, and so does the process's exit.
    worker.unref();
    const failed = (reason: string, cause?: unknown): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(validateError('VALIDATE_CHECK_WORKER_FAILED', { reason }, cause));
      void worker.terminate();
    };
    worker.on('message', (message: CheckResponse | CheckRefusal) => {
      const waiter = this.waiting.get(message.id);
      if (!waiter) return;
      this.waiting.delete(message.id);
      if (!('error' in message)) return waiter.resolve(message);
      waiter.reject(validateError('VALIDATE_CHECK_WORKER_FAILED', { reason: message.error }));
      // Its state is in doubt (a schema id it may not have been taught): the next request starts
      // a new worker and teaches it every id.
      failed(`the worker refused a request: ${message.error}`);
    });
    worker.on('messageerror', (err) => failed(`a message from the worker could not be read: ${err.message}`, err));
    worker.on('error', (err) => failed(err.message, err));
    worker.on('exit', (code) => failed(`the worker exited with code ${code}`));
    this.worker = worker;
    this.learnedSent = 0;
    return worker;
  }

  private failAll(err: unknown): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(err);
  }
}

/** The outcomes a response carries, one per record of its request. */
function outcomesOf(response: CheckResponse): CheckOutcome[] {
  const values = unpackBytes(response.values);
  const out: CheckOutcome[] = new Array(response.status.length).fill(null);
  let k = 0;
  for (let i = 0; i < response.status.length; i++) {
    if (response.status[i] !== CHECK_STATUS.ok) continue;
    const target = response.targets[response.targetOf[i]];
    out[i] = { ok: true, contract: target.contract, topic: target.topic, key: response.keys[k], value: values[k] as Buffer };
    k++;
  }
  for (const f of response.failed) out[f.index] = { ok: false, ...(f.contract === undefined ? {} : { contract: f.contract }), issues: f.issues };
  for (const t of response.threw) out[t.index] = { threw: t.message };
  return out;
}

/**
 * The worker's entry: check-worker.js beside this file once bundled (deploy/bundle.sh builds it
 * beside main.js), else check-worker.ts through tsx's loader (which a process run by tsx passes
 * on to its workers by itself, and Jest's does not have).
 */
function workerFile(): { file: string; execArgv?: string[] } {
  const bundled = path.join(__dirname, 'check-worker.js');
  if (existsSync(bundled)) return { file: bundled };
  const source = path.join(__dirname, 'check-worker.ts');
  const loaded = process.execArgv.some((a) => a.includes('tsx'));
  return loaded ? { file: source } : { file: source, execArgv: ['--import', 'tsx'] };
}
