import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { validTopicName } from '@sluice/contracts';
import { BatchConsumer, KafkaAdmin, type ConsumedMessage } from '@sluice/kafka';

export const ROOT = path.resolve(__dirname, '../../..');

export { testBrokers, testSecureKafka } from '@sluice/testing';

export function randomName(prefix: string): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

export async function createTopics(brokers: string, names: string[], partitions = 3): Promise<void> {
  const admin = new KafkaAdmin({ brokers, clientId: 'validate-test-admin' });
  try {
    for (const name of names) await admin.createTopic({ name, partitions });
  } finally {
    await admin.close();
  }
}

/**
 * Reads topics from the start (under read_committed unless told) until at least `expected`
 * records arrived, then polls `settleMs` more so that duplicates would show up too. The settle
 * window starts once the reader holds its partitions (the only member of its group, it gets them
 * all): a check that nothing is visible (`expected` 0) would otherwise pass on a reader still
 * joining its group.
 */
export async function readTopics(
  brokers: string,
  topics: string[],
  expected: number,
  timeoutMs = 60_000,
  settleMs = 1500,
  isolationLevel: 'read_committed' | 'read_uncommitted' = 'read_committed',
): Promise<ConsumedMessage[]> {
  const consumer = new BatchConsumer({ brokers, groupId: randomName('reader'), topics, maxBatchMessages: 5000, maxBatchWaitMs: 200, isolationLevel });
  await consumer.connect();
  const out: ConsumedMessage[] = [];
  try {
    const deadline = Date.now() + timeoutMs;
    while (out.length < expected && Date.now() < deadline) out.push(...(await consumer.poll()));
    const joinBy = Date.now() + 30_000;
    while (consumer.assignment().length === 0) {
      if (Date.now() > joinBy) throw new Error(`the reader of ${topics.join(', ')} got no partitions within 30 s`);
      out.push(...(await consumer.poll()));
    }
    const settle = Date.now() + settleMs;
    while (Date.now() < settle) out.push(...(await consumer.poll()));
  } finally {
    await consumer.close();
  }
  return out;
}

/** A service started as a real child process through tsx, with its output captured. */
export interface Child {
  proc: ChildProcess;
  output: string[];
  /** Resolves with the first output line matching `pattern`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
}

export function startService(main: string, env: Record<string, string>): Child {
  // The service runs in this very process (tsx as a loader, not its CLI, which would run the
  // service in a child of its own): a SIGKILL of `proc` is a SIGKILL of the service. Named after
  // the crash test whose kills left the real instances running as orphans.
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, main)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  };
  proc.stdout?.on('data', onData);
  proc.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    output,
    exited,
    waitFor(pattern, timeoutMs = 60_000) {
      const found = output.find((l) => pattern.test(l));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output:\n${output.slice(-30).join('\n')}`)), timeoutMs);
        waiters.push({ pattern, resolve: (l) => (clearTimeout(timer), resolve(l)) });
        void exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`process exited (${code}) before ${pattern}; output:\n${output.slice(-30).join('\n')}`));
        });
      });
    },
  };
}

export async function stopService(child: Child | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill(signal);
  await child.exited;
}

export function order(overrides: Record<string, unknown> = {}, payload: Record<string, unknown> = {}): Record<string, unknown> {
  const id = randomUUID();
  return {
    contract: 'orders',
    event_id: `evt-${id}`,
    event_time: new Date().toISOString(),
    producer: 'shop',
    schema_version: 2,
    version: 1,
    op: 'upsert',
    order_id: `o-${id.slice(0, 8)}`,
    payload: { customer_id: 'c-1', status: 'paid', total_cents: 1999, currency: 'EUR', item_count: 2, coupon_code: null, ...payload },
    ...overrides,
  };
}

export function inventory(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contract: 'inventory',
    event_id: `evt-${randomUUID()}`,
    event_time: new Date().toISOString(),
    producer: 'wms',
    schema_version: 1,
    version: 3,
    op: 'upsert',
    sku: `sku-${randomBytes(3).toString('hex')}`,
    warehouse_id: 'w-1',
    payload: { on_hand: 10, reserved: 2 },
    ...overrides,
  };
}

export function click(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contract: 'clickstream',
    event_id: `evt-${randomUUID()}`,
    event_time: new Date().toISOString(),
    producer: 'web',
    schema_version: 1,
    version: 0,
    op: 'upsert',
    user_id: `u-${randomBytes(3).toString('hex')}`,
    payload: { session_id: 's-1', event_type: 'page_view', page: '/home', referrer: null, duration_ms: null },
    ...overrides,
  };
}

/** Environment for a validate child process on isolated topics. */
export function validateEnv(brokers: string, t: Topics, extra: Record<string, string> = {}): Record<string, string> {
  return {
    KAFKA_BROKERS: brokers,
    VALIDATE_GROUP_ID: t.group,
    VALIDATE_INSTANCE_ID: 'v0',
    VALIDATE_RAW_TOPIC: t.raw,
    VALIDATE_DLQ_TOPIC: t.dlq,
    VALIDATE_VALID_TOPIC_PREFIX: t.prefix,
    VALIDATE_SESSION_TIMEOUT_MS: '6000',
    OPS_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** The topics of one test, all random. */
export interface Topics {
  prefix: string;
  raw: string;
  dlq: string;
  group: string;
  valid: { orders: string; inventory: string; clickstream: string };
}

export function topicsFor(name: string): Topics {
  const prefix = `${randomName(name)}.`;
  return {
    prefix,
    raw: `${prefix}raw`,
    dlq: `${prefix}dlq`,
    group: `${prefix}validate`,
    valid: { orders: `${prefix}${validTopicName('orders')}`, inventory: `${prefix}${validTopicName('inventory')}`, clickstream: `${prefix}${validTopicName('clickstream')}` },
  };
}
