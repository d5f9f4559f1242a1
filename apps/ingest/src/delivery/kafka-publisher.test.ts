import { SluiceError } from '@sluice/errors';
import { KafkaPublisher, type ProducerPort } from './kafka-publisher';

// After a broker restart the producer once kept timing out every delivery for minutes while the
// broker answered metadata probes; ingest stayed "alive" and answered 503 until it was restarted.
describe('KafkaPublisher liveness (bug: a wedged producer kept /healthz green)', () => {
  let t: number;
  let deliver: boolean;
  let brokerAnswers: boolean;
  let leaderless: number[];
  const producer: ProducerPort = {
    hasCapacity: () => true,
    sendBatch: async () => {
      if (!deliver) throw new SluiceError('KAFKA_TIMEOUT', 'produce: Local: Message timed out', { retryable: true });
      return undefined;
    },
  };
  const record = { key: 'k', value: Buffer.from('v'), headers: {} };
  let publisher: KafkaPublisher;
  const probe = () => (publisher as unknown as { runProbe(): Promise<void> }).runProbe();
  const publish = () => publisher.publish('raw', [record]).catch(() => undefined);

  beforeEach(() => {
    t = 0;
    deliver = true;
    brokerAnswers = true;
    leaderless = [];
    publisher = new KafkaPublisher(producer, {
      probe: async () => {
        if (!brokerAnswers) throw new SluiceError('KAFKA_BROKER_UNREACHABLE', 'down', { retryable: true });
        return { leaderlessPartitions: leaderless };
      },
      probeIntervalMs: 1000,
      wedgeAfterMs: 60_000,
      now: () => t,
    });
  });

  it('turns not-live when deliveries fail for the limit while every probe finds the broker', async () => {
    deliver = false;
    await probe();
    await publish();
    for (t = 15_000; t < 60_000; t += 15_000) {
      await publish();
      await probe();
      expect(publisher.isLive()).toBe(true);
    }
    t = 60_000;
    await publish();
    expect(publisher.isLive()).toBe(false);
    // A delivery that gets through means the producer works again.
    deliver = true;
    await publish();
    expect(publisher.isLive()).toBe(true);
  });

  // A raw partition without a leader fails every batch that touches it while the broker answers;
  // restarting ingest does not bring the leader back, so the pod crash-looped.
  it('stays live while a raw partition has no leader, and keeps accepting requests', async () => {
    deliver = false;
    leaderless = [3];
    await probe();
    for (t = 0; t <= 300_000; t += 15_000) {
      await publish();
      // Between probes too: a failed delivery does not turn requests away (they would get 503
      // until the next probe, every time a batch touching the partition timed out).
      expect(publisher.isAvailable()).toBe(true);
      await probe();
    }
    expect(publisher.isLive()).toBe(true);
    expect(publisher.isAvailable()).toBe(true);
    // The leader is back but deliveries still fail: from then on it counts again.
    leaderless = [];
    await probe();
    for (const end = t + 60_000; t <= end; t += 15_000) await publish();
    expect(publisher.isLive()).toBe(false);
  });

  it('does not count a quiet spell: one failure, no traffic for minutes, then one more failure', async () => {
    await probe();
    deliver = false;
    await publish();
    t = 20 * 60_000;
    await probe();
    await publish();
    expect(publisher.isLive()).toBe(true);
  });

  it('stays live through an outage of any length: failed probes restart the clock', async () => {
    deliver = false;
    brokerAnswers = false;
    for (t = 0; t <= 300_000; t += 15_000) {
      await publish();
      await probe();
    }
    expect(publisher.isLive()).toBe(true);
    // The broker is back; one more delivery timeout passes before deliveries succeed.
    brokerAnswers = true;
    await probe();
    t += 15_000;
    await publish();
    expect(publisher.isLive()).toBe(true);
    deliver = true;
    t += 1_000;
    await publish();
    expect(publisher.isLive()).toBe(true);
  });

  // A fatal idempotent-producer error made every later produce fail at once with KAFKA_FATAL,
  // which is not a "broker down" code: ingest answered 503 forever with /healthz green.
  it('turns not-live at once on a fatal producer error, while the broker answers', async () => {
    const fatal: ProducerPort = {
      hasCapacity: () => true,
      sendBatch: async () => {
        throw new SluiceError('KAFKA_FATAL', 'produce: Broker: Out of order sequence number', { retryable: false });
      },
    };
    const p = new KafkaPublisher(fatal, { probe: async () => undefined, probeIntervalMs: 1000, wedgeAfterMs: 60_000, now: () => t });
    await (p as unknown as { runProbe(): Promise<void> }).runProbe();
    expect(p.isLive()).toBe(true);
    await expect(p.publish('raw', [record])).rejects.toMatchObject({ code: 'KAFKA_FATAL' });
    expect(p.isLive()).toBe(false);
  });
});
