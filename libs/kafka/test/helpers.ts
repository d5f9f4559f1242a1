import { randomBytes } from 'node:crypto';
import { BatchConsumer, KafkaAdmin, type ConsumedMessage, type ConsumerOptions } from '../src';

/** The test broker list; a missing variable fails the test loudly, never skips it. */
export function testBrokers(): string {
  const brokers = process.env.SLUICE_TEST_KAFKA_BROKERS;
  if (!brokers) {
    throw new Error(
      'SLUICE_TEST_KAFKA_BROKERS is not set. Start Kafka (KAFKA_PORT=19092 bash tools/kafka/kafka.sh start) and export SLUICE_TEST_KAFKA_BROKERS=127.0.0.1:19092',
    );
  }
  return brokers;
}

/** The test broker's secure listeners (tools/kafka/kafka.sh with KAFKA_SECURE_LISTENERS=1). */
export interface SecureListeners {
  /** SASL over TLS: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. */
  saslSsl: string;
  /** TLS requiring a client certificate. */
  ssl: string;
  /** ca.pem, client-cert.pem, client-key.pem. */
  tlsDir: string;
  username: string;
  password: string;
}

/** The secure listeners' settings; missing variables fail the test loudly, never skip it. */
export function testSecureListeners(): SecureListeners {
  const env = process.env;
  const values = {
    saslSsl: env.SLUICE_TEST_KAFKA_SASL_SSL_BROKERS,
    ssl: env.SLUICE_TEST_KAFKA_SSL_BROKERS,
    tlsDir: env.SLUICE_TEST_KAFKA_TLS_DIR,
    username: env.SLUICE_TEST_KAFKA_SASL_USERNAME,
    password: env.SLUICE_TEST_KAFKA_SASL_PASSWORD,
  };
  if (Object.values(values).some((v) => !v)) {
    throw new Error(
      'SLUICE_TEST_KAFKA_SASL_SSL_BROKERS & co. are not set. Start Kafka with its secure listeners (KAFKA_SECURE_LISTENERS=1 KAFKA_PORT=19092 bash tools/kafka/kafka.sh start) and export what `KAFKA_SECURE_LISTENERS=1 KAFKA_PORT=19092 bash tools/kafka/kafka.sh env` prints',
    );
  }
  return values as SecureListeners;
}

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
