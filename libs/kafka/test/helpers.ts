import { randomBytes } from 'node:crypto';
import { BatchConsumer, KafkaAdmin, type ConsumedMessage, type ConsumerOptions } from '../src';
import { testBrokers } from '@sluice/testing';

export { testBrokers, testSecureListeners, type SecureListeners } from '@sluice/testing';

/** A fresh name for a topic, group or transactional id. */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

/** Creates a topic with a random name and returns it. */
export async function createTestTopic(admin: KafkaAdmin, partitions = 1, configs?: Record<string, string>): Promise<string> {
  const name = unique('t');
  await admin.createTopic({ name, partitions, configs });
  return name;
}

/** A connected batch consumer on a fresh group. */
export async function testConsumer(topics: string[], extra: Partial<ConsumerOptions> = {}): Promise<BatchConsumer> {
  const consumer = new BatchConsumer({ brokers: testBrokers(), groupId: unique('g'), topics, sessionTimeoutMs: 6000, ...extra });
  await consumer.connect();
  return consumer;
}

/** Polls until `count` messages arrived or `timeoutMs` passed; returns what arrived. */
export async function pollCount(consumer: BatchConsumer, count: number, timeoutMs = 20_000): Promise<ConsumedMessage[]> {
  const out: ConsumedMessage[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < count && Date.now() < deadline) out.push(...(await consumer.poll()));
  return out;
}

/** Polls for `ms` and returns everything that arrived. */
export async function pollFor(consumer: BatchConsumer, ms: number): Promise<ConsumedMessage[]> {
  const out: ConsumedMessage[] = [];
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) out.push(...(await consumer.poll()));
  return out;
}

/** Polls until the consumer has an assignment. */
export async function waitForAssignment(consumer: BatchConsumer, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (consumer.assignment().length === 0) {
    if (Date.now() > deadline) throw new Error('no partitions assigned in time');
    await consumer.poll();
  }
}
